import MetadataIndex
import Synchronization

/// `mdfind` and `mdls`: the same binary under Apple's names (installed as
/// links to `mdq`), taking Apple's command lines and turning each into the
/// `mdq` command line that means the same. What Apple's tools do that mdq
/// cannot is refused in one line with status 2, never ignored.
enum Personality {
    /// Set for `mdfind -attr`: result lines print `path   key = value`, as
    /// mdfind prints them, instead of tab-separated columns.
    static let mdfindLines = Atomic<Bool>(false)
    /// Set when run as `mdls`: an attribute name mdq does not know prints
    /// `(null)`, as mdls prints any key a file has no value for.
    static let mdlsKeys = Atomic<Bool>(false)

    /// The mdq arguments for `program` (the name it was run as) given
    /// `arguments`; the arguments unchanged for `mdq` itself. Exits with
    /// status 2 and one line on stderr for what cannot be done.
    static func arguments(for program: String, _ arguments: [String]) -> [String] {
        switch named(program) {
        case "mdfind": return mdfind(arguments)
        case "mdls": return mdls(arguments)
        default: return arguments
        }
    }

    /// `mdfind` or `mdls` when `program` (a path, as run) is one of them;
    /// nil for `mdq` itself.
    static func named(_ program: String) -> String? {
        let base = program.split(separator: "/").last.map(String.init) ?? program
        return base == "mdfind" || base == "mdls" ? base : nil
    }

    static let mdfindUsage = """
        usage: mdfind [-live] [-count] [-onlyin DIR]... [-name NAME] [-0] [-attr KEY]... [-literal] QUERY
          -live       keep printing changes (+ added, - removed, ~ changed) until interrupted
          -count      print the number of matches
          -onlyin DIR search DIR's subtree (repeatable); without it, everything the index daemon indexes
          -name NAME  names containing NAME, any case and accents
          -0          NUL after each path
          -attr KEY   print KEY's value after each path (repeatable)
          -literal    read QUERY as an attribute query, never as words
        QUERY is words (found in names and, with content indexing, inside files) or an attribute
        query in mdfind's syntax: kMDItemFSName == "*.pdf"cd && kMDItemFSSize > 10MB.
        mdfind is mdq (mdq --help); -interpret, -reprint and -s are not supported.
        """

    /// `mdfind [-live] [-count] [-onlyin DIR]… [-name NAME] [-0] [-attr KEY]… [-literal] QUERY`.
    static func mdfind(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var onlyIn: [String] = []
        var name: String?
        var literal = false
        var words: [String] = []
        var rest = arguments[...]
        func value(_ option: String) -> String {
            guard let next = rest.popFirst() else { refuse("mdfind: \(option) needs a value") }
            return next
        }
        while let argument = rest.popFirst() {
            guard words.isEmpty, argument.hasPrefix("-"), argument.count > 1 else {
                words.append(argument)
                continue
            }
            switch argument {
            case "-live": out.append("--live")
            case "-count": out.append("--count")
            case "-0": out.append("-0")
            case "-onlyin": onlyIn.append(value(argument))
            case "-name": name = value(argument)
            case "-attr": out += ["--attr", value(argument)]
            case "-literal": literal = true
            case "-h", "-help", "--help":
                StandardOutput.write(Array((mdfindUsage + "\n").utf8))
                ProcessExit.exit(0)
            case "-interpret":
                refuse(
                    "mdfind: -interpret (Spotlight's natural-language reading, such as 'kind:pdf date:today') "
                        + "is not supported: write words or an attribute query")
            case "-reprint":
                refuse("mdfind: -reprint is not supported: -live prints each change (+ added, - removed, ~ changed)")
            case "-s":
                refuse("mdfind: -s (a Finder saved search) is not supported: there are no saved searches here")
            case "--":
                words += rest
                rest = []
            default:
                refuse("mdfind: unknown option \(argument) (mdfind -help lists them)")
            }
        }
        if out.contains("--attr") { mdfindLines.store(true, ordering: .relaxed) }
        // -count prints a number, which -0 does not change (mdq refuses the
        // pair, since its -0 is about paths).
        if out.contains("--count") { out.removeAll { $0 == "-0" } }
        // Everything indexed, as mdfind searches the whole Spotlight index,
        // unless -onlyin narrows it.
        out += onlyIn.isEmpty ? ["-a"] : onlyIn.flatMap { ["--onlyin", $0] }
        if let name {
            guard words.isEmpty else { refuse("mdfind: -name takes no query besides NAME") }
            return out + ["--name", name]
        }
        guard !words.isEmpty else { refuse("mdfind: no query given (mdfind -help)") }
        let query = words.joined(separator: " ")
        // Apple's syntax for attribute queries; words stay words (names and
        // text). -literal takes the query as an attribute query as written,
        // so words are refused, as Spotlight cannot make a query of them.
        let isQuery = CommandLineQuery.looksLikePredicate(Array(query.utf8))
        if literal && !isQuery {
            refuse(
                "mdfind: -literal takes an attribute query, such as kMDItemFSName == \"*\(query)*\"cd; "
                    + "'\(query)' is words (leave out -literal to search them)")
        }
        if isQuery { return out + ["--spotlight", "--", query] }
        return out + ["--", query]
    }

    /// `mdls [-name KEY]… [-raw [-nullMarker TEXT]] FILE…`.
    static func mdls(_ arguments: [String]) -> [String] {
        mdlsKeys.store(true, ordering: .relaxed)
        var out = ["ls"]
        var files: [String] = []
        var rest = arguments[...]
        var raw = false
        var marker: String?
        while let argument = rest.popFirst() {
            guard files.isEmpty, argument.hasPrefix("-"), argument.count > 1 else {
                files.append(argument)
                continue
            }
            switch argument {
            case "-name":
                guard let key = rest.popFirst() else { refuse("mdls: -name needs an attribute name") }
                out += ["--name", key]
            case "-raw": raw = true
            case "-nullMarker":
                guard let text = rest.popFirst() else { refuse("mdls: -nullMarker needs a value") }
                marker = text
            case "-h", "-help", "--help":
                StandardOutput.write(
                    Array(
                        ("usage: mdls [-name KEY]... [-raw [-nullMarker TEXT]] FILE...\n"
                            + "mdls is mdq ls (mdq ls --help); -plist is not supported\n").utf8))
                ProcessExit.exit(0)
            case "-plist":
                refuse("mdls: -plist is not supported: mdq ls --json prints the attributes as JSON")
            case "--":
                files += rest
                rest = []
            default:
                refuse("mdls: unknown option \(argument)")
            }
        }
        guard !files.isEmpty else { refuse("usage: mdls [-name KEY]... [-raw [-nullMarker TEXT]] FILE...") }
        if raw { out.append("--raw") }
        // The marker is for -raw output only; without -raw mdls accepts it
        // and prints (null), as here.
        if let marker, raw { out += ["--null-marker", marker] }
        return out + ["--"] + files
    }

    private static func refuse(_ message: String) -> Never {
        Diagnostics.write(message + "\n")
        ProcessExit.exit(2)
    }
}
