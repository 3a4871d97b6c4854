import ArgumentParser
import Foundation
import MDQLive
import MetadataIndex
import SystemPackage

/// `mdq ls PATH...`: every attribute of each item, like `mdls`.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "Print the metadata attributes of files and folders, like mdls.",
        discussion: """
            Attributes are printed as aligned 'key = value' lines, sorted by key: strings quoted, \
            dates in UTC as mdls prints them, lists in parentheses, (null) for a requested attribute \
            the item does not have. Symlinks are described, not followed.

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

    @Flag(
        name: .long,
        help: "Print only the values, separated by NUL (no keys, no alignment, strings unquoted), as mdls -raw.")
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
        for key in names where !AttributeKeys.isKnown(key) && !Personality.mdlsKeys.load(ordering: .relaxed) {
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
        // What is inside files, as mdls shows it: imported in a confined
        // worker (only the importers for the attributes asked for).
        let asked = names.compactMap { MetadataAttribute(key: $0) }
        let wanted: Set<MetadataAttribute>? = names.isEmpty ? nil : Set(asked.filter(\.isImported))
        let pool = wanted?.isEmpty == true ? nil : ImportWorkerPool()
        defer { pool?.shutdown() }
        if let pool, (try? pool.checkAvailable()) == nil {
            Diagnostics.warn(MetadataError.importUnavailable(pool.configuration.executable).description)
        }
        var failed = false
        var out: [UInt8] = []
        // --raw values are separated by NUL, not ended by one (as mdls -raw:
        // `w=$(mdls -raw -name kMDItemPixelWidth f)` reads one value).
        var firstRawValue = true
        for (i, path) in paths.enumerated() {
            var item: MetadataItem
            do {
                item = try MetadataItem(path: FilePath.fromBytes(arguments.bytes(for: path)), container: containerValue)
                if item.kind == .file, let pool, (try? pool.checkAvailable()) != nil {
                    item.importedValues = pool.importFile(at: item.path, wanted: wanted).values
                }
            } catch {
                StandardOutput.flush(&out)
                Diagnostics.error(error.description)
                failed = true
                continue
            }
            var keys = names.isEmpty ? item.attributes.sorted() : names.map(Self.canonicalKey)
            if names.isEmpty && Personality.mdlsKeys.load(ordering: .relaxed) {
                // mdls lists Spotlight's kMDItem keys: not the NSMetadata
                // item keys of MetadataQuery, nor mdq's own.
                keys.removeAll { $0.hasPrefix("NSMetadata") || $0.hasPrefix("kMDQ") }
            }
            // Listing everything, the text is shown in part (mdls does not
            // show it at all); asked for by name, whole.
            if names.isEmpty, case .text(let bytes)? = item.importedValues?[.textContent], bytes.count > 300 {
                let excerpt = String(decoding: bytes.prefix(300), as: UTF8.self)
                item.importedValues?[.textContent] = .text(Array((excerpt + "…").utf8))
            }
            if json {
                appendJSON(item, keys: keys, to: &out)
            } else if raw {
                for key in keys {
                    if !firstRawValue { out.append(0) }
                    firstRawValue = false
                    if case .text(let bytes)? = AttributeText.value(of: item, key) {
                        // Strings unquoted, as mdls -raw prints them (what
                        // scripts read: `mdls -raw -name kMDItemContentType`).
                        out += bytes
                    } else if let value = AttributeText.value(of: item, key) {
                        value.appendText(to: &out, style: .listing)
                    } else {
                        out += Array((nullMarker ?? "(null)").utf8)
                    }
                }
            } else {
                if paths.count > 1 {
                    if i > 0 { out.append(0x0A) }
                    out += item.pathBytes + Array(":\n".utf8)
                }
                let width = keys.map(\.utf8.count).max() ?? 0
                for key in keys {
                    out += Array(key.utf8) + [UInt8](repeating: 0x20, count: width - key.utf8.count)
                    out += Array(" = ".utf8)
                    if let value = AttributeText.value(of: item, key) {
                        value.appendText(to: &out, style: .listing)
                    } else {
                        out += Array("(null)".utf8)
                    }
                    out.append(0x0A)
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

    private func appendJSON(_ item: MetadataItem, keys: [String], to out: inout [UInt8]) {
        out += Array("{\"path\":".utf8)
        if !JSONLine.appendString(item.pathBytes[...], to: &out) {
            out += Array(",\"pathBase64\":\"\(Data(item.pathBytes).base64EncodedString())\"".utf8)
        }
        out.append(UInt8(ascii: ","))
        AttributeText.appendAttributes(item, keys, to: &out)
        out += Array("}\n".utf8)
    }
}
