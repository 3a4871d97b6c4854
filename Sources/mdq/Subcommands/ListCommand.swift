import ArgumentParser
import Foundation
import MetadataIndex
import SystemPackage

/// `mdq ls PATH...`: every attribute of each item, like `mdls`.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "Print the metadata attributes of files and folders, like mdls.",
        discussion: """
            Attributes are printed as aligned 'key = value' lines, sorted by key: strings quoted, \
            dates in local time, lists in parentheses, (null) for a requested attribute the item \
            does not have. Symlinks are described, not followed.

            Examples:
              mdq ls photo.png
              mdq ls --name kMDItemContentType --name kMDItemFSSize *.pdf
              mdq ls --raw --name kMDItemFSSize big.iso
              mdq ls --json --container ~/Sync Documents/report.pages

            Exit status: 0 success, 1 when some path could not be read, 2 usage error.
            """
    )

    @Option(
        name: .customLong("name"),
        help: ArgumentHelp("Print only this attribute (repeatable), e.g. kMDItemContentType.", valueName: "KEY"),
        completion: AttributeKeys.completion)
    var names: [String] = []

    @Flag(name: .long, help: "Print only the values, each followed by NUL (no keys, no alignment).")
    var raw = false

    @Option(
        name: .long,
        help: ArgumentHelp("With --raw, print TEXT for a missing value instead of (null).", valueName: "TEXT")
    )
    var nullMarker: String?

    @Flag(name: .long, help: "Print one JSON object per path: {\"path\": ..., \"attributes\": {...}}.")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A ubiquity container (path or identifier): items inside it get the ubiquitous keys.",
            valueName: "PATH|ID"),
        completion: .directory)
    var container: String?

    @Argument(help: ArgumentHelp("Files or folders to describe.", valueName: "path"), completion: .file())
    var paths: [String] = []

    // In `run()`, not `validate()`, so an unknown option is reported first.
    private func check() throws {
        if paths.isEmpty { throw ValidationError("give at least one PATH") }
        if raw && json { throw ValidationError("--raw and --json do not combine") }
        for key in names where !AttributeKeys.isKnown(key) {
            throw ValidationError("unknown attribute '\(key)' (mdq --list-attributes prints them all)")
        }
    }

    func run() throws {
        // ls prints a few lines and starts no thread: Ctrl-C may end it at once.
        ProcessEnvironment.unblockInterruptSignals()
        try check()
        let arguments = RawArguments()
        let cwd = ProcessEnvironment.currentDirectory
        let containerValue = try container.map { value throws(MetadataError) in
            try UbiquityContainer(pathOrIdentifier: FilePath.fromBytes(arguments.bytes(for: value)), relativeTo: cwd)
        }
        ProcessEnvironment.ignoreBrokenPipe()
        var failed = false
        var out: [UInt8] = []
        for (i, path) in paths.enumerated() {
            let item: MetadataItem
            do {
                item = try MetadataItem(path: FilePath.fromBytes(arguments.bytes(for: path)), container: containerValue)
            } catch {
                StandardOutput.flush(&out)
                Diagnostics.error(error.description)
                failed = true
                continue
            }
            let keys = names.isEmpty ? item.attributes.sorted() : names.map(Self.canonicalKey)
            if json {
                appendJSON(item, keys: keys, to: &out)
            } else if raw {
                for key in keys {
                    out +=
                        item.value(forAttribute: key).map { Array(Self.text(of: $0, indent: "").utf8) }
                        ?? Array((nullMarker ?? "(null)").utf8)
                    out.append(0)
                }
            } else {
                if paths.count > 1 {
                    if i > 0 { out.append(0x0A) }
                    out += item.pathBytes + Array(":\n".utf8)
                }
                let width = keys.map(\.utf8.count).max() ?? 0
                for key in keys {
                    let value = item.value(forAttribute: key).map { Self.text(of: $0, indent: "") } ?? "(null)"
                    out += Array(
                        (key.padding(toLength: width, withPad: " ", startingAt: 0) + " = " + value + "\n").utf8)
                }
            }
            StandardOutput.flush(&out)
        }
        if failed { throw ExitCode(1) }
    }

    /// `NSMetadataItemFSNameKey` and friends print under their raw key.
    static func canonicalKey(_ key: String) -> String {
        MetadataAttribute(key: key)?.rawValue ?? key
    }

    /// A value as mdls prints it.
    static func text(of value: Any, indent: String) -> String {
        switch value {
        case let string as String: return quoted(string)
        case let url as URL: return quoted(url.absoluteString)
        case let date as Date:
            var text: [UInt8] = []
            TextFormat.appendLocalDate(Timestamp(date), to: &text)
            return String(decoding: text, as: UTF8.self)
        case let flag as Bool: return flag ? "1" : "0"
        case let number as Int: return String(number)
        case let number as Double:
            return number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
        case let list as [String]:
            return "(\n" + list.map { "    " + quoted($0) }.joined(separator: ",\n") + "\n)"
        default: return quoted("\(value)")
        }
    }

    static func quoted(_ string: String) -> String {
        "\"" + string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    private func appendJSON(_ item: MetadataItem, keys: [String], to out: inout [UInt8]) {
        out += Array("{\"path\":".utf8)
        if !JSONLine.appendString(item.pathBytes[...], to: &out) {
            out += Array(",\"pathBase64\":\"\(Data(item.pathBytes).base64EncodedString())\"".utf8)
        }
        out.append(UInt8(ascii: ","))
        AttributeText.appendAttributes(item, keys, to: &out)
        out += Array("}\n".utf8)
    }

    static func appendJSONValue(_ value: Any?, to out: inout [UInt8]) {
        switch value {
        case nil: out += Array("null".utf8)
        case let string as String: JSONLine.appendString(Array(string.utf8)[...], to: &out)
        case let url as URL: JSONLine.appendString(Array(url.absoluteString.utf8)[...], to: &out)
        case let date as Date: JSONLine.appendDate(Timestamp(date), to: &out)
        case let flag as Bool: out += Array((flag ? "true" : "false").utf8)
        case let number as Int: TextFormat.appendDecimal(Int64(number), to: &out)
        case let number as Double: out += Array(String(number).utf8)
        case let list as [String]:
            out.append(UInt8(ascii: "["))
            for (i, element) in list.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONLine.appendString(Array(element.utf8)[...], to: &out)
            }
            out.append(UInt8(ascii: "]"))
        default: JSONLine.appendString(Array("\(value!)".utf8)[...], to: &out)
        }
    }
}
