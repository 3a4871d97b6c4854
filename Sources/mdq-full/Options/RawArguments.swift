import MetadataIndex

/// The command line's arguments as raw bytes.
///
/// ArgumentParser sees decoded strings, in which bytes that are not UTF-8
/// became U+FFFD; a query or path naming such bytes must use the original.
/// Each parsed value is matched back to the argument it came from.
struct RawArguments {
    private let raw: [[UInt8]] = ProcessEnvironment.rawArguments

    /// The original bytes of a parsed value: the argument itself, or the part
    /// after `=` in `--option=value`.
    func bytes(for value: String) -> [UInt8] {
        for argument in raw.dropFirst() {
            if String(decoding: argument, as: UTF8.self) == value { return argument }
            if let equals = argument.firstIndex(of: UInt8(ascii: "=")), argument.starts(with: [0x2D, 0x2D]) {
                let tail = Array(argument[(equals + 1)...])
                if String(decoding: tail, as: UTF8.self) == value { return tail }
            }
        }
        return Array(value.utf8)
    }
}
