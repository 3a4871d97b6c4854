package import MDQCore
package import MDQSystem
package import SystemPackage

/// What importing one file found: its type by name and by content, what
/// each importer extracted or why it failed, and the merged values. What
/// `mdq import` prints (as `mdimport -t -d2` does on macOS).
package struct ImportReport: Sendable {
    /// One importer's outcome.
    package struct Step: Sendable {
        package var importer: String
        package var values: ImportedValues
        package var failure: ImportFailure?
    }

    package var path: FilePath
    /// The type the extension names.
    package var typeByName: String
    /// The type the leading bytes name, when it wins over the extension's.
    package var sniffedType: String?
    package var steps: [Step] = []
    /// Every importer's values merged, with `kMDQItemSniffedContentType`
    /// and, when an importer failed, `kMDQItemImportError`.
    package var values = ImportedValues()
    /// Why the file could not be opened at all (not a regular file, no
    /// permission, gone).
    package var failure: ImportFailure?

    /// The type importers were chosen by.
    package var type: String { sniffedType ?? typeByName }

    /// Why a file could not be opened for importing, from `open`'s error.
    static func openFailure(_ error: Errno) -> ImportFailure {
        ImportFailure(
            error == .tooManySymbolicLinkLevels
                ? "a symlink (not followed)"
                : error == .invalidArgument ? "not a regular file" : "cannot open: \(error.description)")
    }

    /// Imports the file at `path` in this process, with those of
    /// `importers` that fill an attribute of `wanted` (all when nil).
    ///
    /// Only for the built-in importers (Swift over `ContentFile`: bounded
    /// reads, no C parser); the import worker runs `importFile(from:)`.
    package static func importFile(
        at path: FilePath, limits: ImportLimits = .standard, importers: [any Importer] = ImporterRegistry.builtIn,
        wanted: Set<MetadataAttribute>? = nil
    ) -> ImportReport {
        switch ContentFile.open(path, budget: limits.bytesRead) {
        case .success(let file):
            return importFile(from: file, path: path, limits: limits, importers: importers, wanted: wanted)
        case .failure(let error):
            var report = ImportReport(path: path, typeByName: typeByName(path))
            report.failure = openFailure(error)
            report.values[.importError] = .text(Array(report.failure!.reason.utf8))
            return report
        }
    }

    /// The type `path`'s name gives.
    package static func typeByName(_ path: FilePath) -> String {
        ContentType.identifier(forName: path.lastComponent.map { Array($0.string.utf8) } ?? [], kind: .file)
    }

    /// Imports the open `file`, whose name is `path` (for its type by
    /// extension; it is not opened again), with those of `importers` that
    /// fill an attribute of `wanted` (all when nil); each reads through a
    /// duplicate of `file` with a budget of its own.
    ///
    /// What the import worker runs, on the descriptor its parent passed.
    package static func importFile(
        from file: ContentFile, path: FilePath, limits: ImportLimits, importers: [any Importer],
        wanted: Set<MetadataAttribute>?
    ) -> ImportReport {
        let name = path.lastComponent.map { Array($0.string.utf8) } ?? []
        var report = ImportReport(path: path, typeByName: typeByName(path))
        if case .success(let head) = file.read(at: 0, count: ContentSniffer.headLength) {
            let refined = ContentSniffer.refinedType(name: name, head: head)
            if refined != report.typeByName {
                report.sniffedType = refined
                report.values[.sniffedContentType] = .text(Array(refined.utf8))
            }
        }
        // Only the importers filling an attribute wanted (a query on pixel
        // sizes reads image headers, never a text file's text).
        let chosen = ImporterRegistry.importers(for: report.type, in: importers).filter { importer in
            wanted.map { !$0.isDisjoint(with: importer.attributes) } ?? true
        }
        for importer in chosen {
            // Each importer reads within its own budget.
            guard case .success(let own) = file.duplicate(budget: limits.bytesRead) else { break }
            do {
                let values = try importer.extract(from: own, type: report.type, limits: limits)
                report.steps.append(Step(importer: importer.name, values: values))
                report.values.merge(values)
            } catch {
                report.steps.append(Step(importer: importer.name, values: ImportedValues(), failure: error))
                report.values[.importError] = .text(Array("\(importer.name): \(error.reason)".utf8))
            }
        }
        return report
    }
}
