/// mdq's version, printed by `mdq --version` (by the front, `mdq`, and by
/// the full command, `mdq-full`: one constant for both).
public enum MDQVersion {
    /// The version, as `--version` prints it.
    public static let string = "0.2.0"
}
