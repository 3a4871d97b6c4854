import MDQCore
package import MDQImport
import MDQSystem

/// The importers over C format libraries, in the registry's order (after
/// the built-in ones).
package enum FormatImporters {
    package static let all: [any Importer] = [
        PDFImporter(),
        OfficeImporter(),
        ImageImporter(),
        MediaImporter(),
    ]
}
