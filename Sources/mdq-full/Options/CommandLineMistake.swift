import MDQEngine
import MetadataIndex

/// Command lines ArgumentParser would misread rather than refuse, caught
/// or mended before it runs.
enum CommandLineMistake {
    /// Short options mdq has (`-0`, `-a`, `-h`), which may be grouped.
    static let shortFlags: Set<Character> = ["0", "a", "h"]

    /// The first mistake, as a one-line message; nil when there is none.
    ///
    /// `-hidden` would be read as the grouped flags `-h -i -d…`, and `-h`
    /// prints the help: a single dash before a word is an error naming the
    /// long option meant.
    static func find(in arguments: [String]) -> String? {
        for argument in arguments {
            if argument == "--" { return nil }
            guard argument.count > 2, argument.hasPrefix("-"), !argument.hasPrefix("--") else { continue }
            let body = argument.dropFirst()
            if !body.allSatisfy(shortFlags.contains) && !isNumberValue(body) {
                return "unknown option '\(argument)': long options take two dashes (-\(argument)); "
                    + "a query starting with '-' goes after --"
            }
        }
        return nil
    }

    /// The arguments with a value starting with a dash and a digit joined
    /// to the option before it (`--limit -1` becomes `--limit=-1`, `--size
    /// -10M` becomes `--size=-10M`), so the option reads it, and its own
    /// check says what values it takes instead of "missing value".
    static func mended(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--" {
                out.append(argument)
                out += rest
                break
            }
            if argument.hasPrefix("--"), !argument.contains("="), let next = rest.first, next.hasPrefix("-"),
                next.count > 1, isNumberValue(next.dropFirst()), !next.dropFirst().allSatisfy(shortFlags.contains)
            {
                out.append(argument + "=" + next)
                rest = rest.dropFirst()
            } else {
                out.append(argument)
            }
        }
        return out
    }

    /// Whether `text` (after the dash) is a value such as `-1`, `-2.5` or `-10M` (a negative number, or
    /// `--size`'s "at most"), not a flag group such as `-0x`.
    private static func isNumberValue(_ text: Substring) -> Bool {
        SizeUnit.bytes(Array(text.utf8)) != nil
    }
}
