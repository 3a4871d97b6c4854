import ArgumentParser
import MetadataIndex
import SystemPackage

/// `mdq import FILE...`: what the importers extract from each file, and why
/// one failed, like `mdimport -t -d2`. Nothing is stored.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Show what mdq's importers read from inside files (like mdimport -t -d2); nothing is stored.",
        discussion: """
            For each file: its type by extension and, where they differ, by its leading bytes; the \
            importers that ran, and each attribute they extracted, as 'mdq ls' prints them. The text \
            content is shown in part (--full-text for all of it). A file an importer cannot read (a \
            binary named .txt, a truncated document) is reported with the reason.

            Examples:
              mdq import notes.txt
              mdq import --full-text page.html
              mdq import --json ~/Downloads/*

            Exit status: 0 success, 1 when some file could not be imported, 2 usage error.
            """
    )

    @Flag(name: .customLong("full-text"), help: "Print all of kMDItemTextContent, not only its start.")
    var fullText = false

    @Flag(name: .long, help: "Print one JSON object per file: {\"path\", \"type\", \"importers\", \"attributes\"}.")
    var json = false

    @Argument(help: ArgumentHelp("Files to import.", valueName: "file"), completion: .file())
    var files: [String] = []

    /// Characters of text shown without --full-text.
    static let excerptLength = 300

    func run() throws {
        ProcessEnvironment.unblockInterruptSignals()
        if files.isEmpty { throw ValidationError("give at least one FILE") }
        ProcessEnvironment.ignoreBrokenPipe()
        let arguments = RawArguments()
        let cwd = ProcessEnvironment.currentDirectory
        var failed = false
        var out: [UInt8] = []
        // In a confined worker, as the daemon imports: what a hostile file
        // does to an importer is reported, not suffered.
        let pool = ImportWorkerPool()
        defer { pool.shutdown() }
        for (i, file) in files.enumerated() {
            var path = FilePath.fromBytes(arguments.bytes(for: file))
            if !path.isAbsolute { path = cwd.pushing(path) }
            let report = pool.importFile(at: path.lexicallyNormalized())
            if report.failure != nil || report.steps.contains(where: { $0.failure != nil }) { failed = true }
            if json {
                appendJSON(report, to: &out)
            } else {
                if i > 0 { out.append(0x0A) }
                appendText(report, to: &out)
            }
            StandardOutput.flush(&out)
        }
        // A worker the kernel or MDQ_IMPORT_SANDBOX left unsandboxed read
        // these files with the user's full rights: said, not hidden.
        if let confinement = pool.confinement, !confinement.isComplete {
            Diagnostics.warn("the import worker is \(confinement)")
        }
        if failed { throw ExitCode(1) }
    }

    private func shown(_ values: ImportedValues, _ attribute: MetadataAttribute) -> AttributeValue? {
        guard let value = values[attribute] else { return nil }
        guard attribute == .textContent, !fullText, case .text(let bytes) = value else { return value }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.count > Self.excerptLength else { return value }
        return .text(Array((text.prefix(Self.excerptLength) + "… (\(bytes.count) bytes in all)").utf8))
    }

    private func appendText(_ report: ImportReport, to out: inout [UInt8]) {
        out += Array("\(report.path.string):\n".utf8)
        out += Array("  type by extension: \(report.typeByName)\n".utf8)
        if let sniffed = report.sniffedType { out += Array("  type by content:   \(sniffed)\n".utf8) }
        if let failure = report.failure {
            out += Array("  not imported: \(failure.reason)\n".utf8)
            return
        }
        if report.steps.isEmpty { out += Array("  no importer reads this type\n".utf8) }
        for step in report.steps {
            let outcome =
                step.failure.map { "failed: \($0.reason)" }
                ?? (step.values.isEmpty ? "nothing found" : "\(step.values.values.count) attributes")
            out += Array("  importer \(step.importer): \(outcome)\n".utf8)
        }
        let keys = MetadataAttribute.importedAttributes.filter { report.values[$0] != nil }
        let width = keys.map(\.rawValue.utf8.count).max() ?? 0
        for attribute in keys {
            guard let value = shown(report.values, attribute) else { continue }
            out +=
                Array(attribute.rawValue.utf8) + [UInt8](repeating: 0x20, count: width - attribute.rawValue.utf8.count)
            out += Array(" = ".utf8)
            value.appendText(to: &out, style: .listing)
            out.append(0x0A)
        }
    }

    private func appendJSON(_ report: ImportReport, to out: inout [UInt8]) {
        out += Array("{\"path\":".utf8)
        JSONLine.appendString(Array(report.path.string.utf8)[...], to: &out)
        out += Array(",\"type\":".utf8)
        JSONLine.appendString(Array(report.type.utf8)[...], to: &out)
        if let failure = report.failure {
            out += Array(",\"error\":".utf8)
            JSONLine.appendString(Array(failure.reason.utf8)[...], to: &out)
        }
        out += Array(",\"importers\":[".utf8)
        for (i, step) in report.steps.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out += Array("{\"name\":".utf8)
            JSONLine.appendString(Array(step.importer.utf8)[...], to: &out)
            if let failure = step.failure {
                out += Array(",\"error\":".utf8)
                JSONLine.appendString(Array(failure.reason.utf8)[...], to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out += Array("],\"attributes\":{".utf8)
        var first = true
        for attribute in MetadataAttribute.importedAttributes {
            guard let value = shown(report.values, attribute) else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONLine.appendString(Array(attribute.rawValue.utf8)[...], to: &out)
            out.append(UInt8(ascii: ":"))
            AttributeText.appendJSONValue(value, to: &out)
        }
        out += Array("}}\n".utf8)
    }
}
