import ArgumentParser
import MetadataIndex

/// The one-line message for a command-line mistake, and where to read more.
enum UsageMessage {
    /// ArgumentParser's message for `error`, with its "Did you mean" kept
    /// only when the suggestion is close: `--verison` suggests `--version`,
    /// `--foo` suggests nothing (ArgumentParser would offer `--json`).
    static func text(for error: any Error, arguments: [String]) -> String {
        var message = MDQ.message(for: error)
        guard message.hasPrefix("Unknown option '") else { return message + "\n" + hint(arguments: arguments) }
        var candidates = ["--version", "--help"]  // ArgumentParser does not offer its own flags
        if let range = message.range(of: ". Did you mean '") {
            candidates.insert(String(message[range.upperBound...].prefix { $0 != "'" }), at: 0)
            message = String(message[..<range.lowerBound])
        }
        let unknown = message.split(separator: "'").dropFirst().first.map(String.init) ?? ""
        if let suggestion = candidates.first(where: { isClose(unknown, $0) }) {
            message += ". Did you mean '\(suggestion)'?"
        }
        return message + "\n" + hint(arguments: arguments)
    }

    private static func hint(arguments: [String]) -> String {
        "Run '\(arguments.first == "ls" ? "mdq ls" : "mdq") --help' for usage and examples."
    }

    /// Where to read about `command`'s options.
    static func hint(for command: any ParsableCommand) -> String {
        "Run '\(command is ListCommand ? "mdq ls" : "mdq") --help' for usage and examples."
    }

    /// Whether a misspelt option is near enough to a real one to suggest it:
    /// at most two edits, and at most a third of the name.
    static func isClose(_ typed: String, _ option: String) -> Bool {
        let a = typed.drop { $0 == "-" }.utf8
        let b = option.drop { $0 == "-" }.utf8
        let distance = EditDistance.between(a, b)
        return distance <= 2 && distance * 3 <= max(a.count, b.count)
    }
}
