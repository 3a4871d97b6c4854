package import MDQCore
import MDQSystem

/// The one table of importers: each declares the content types it handles
/// and the attributes it fills; a file is given to every importer whose
/// types its type conforms to, in table order (later values win).
///
/// The importers written in Swift over `ContentFile` live here; those over
/// C format libraries (PDF, office documents, images, audio and video)
/// live in the `MetadataImporters` target, which only the import worker
/// links, and are appended by it (`ImportWorkerMain.run`).
package enum ImporterRegistry {
    /// The built-in importers.
    package static let builtIn: [any Importer] = [
        ExtendedAttributeImporter(),
        TextImporter(),
    ]

    /// The importers of `table` for a file of type `type`.
    static func importers(for type: String, in table: [any Importer]) -> [any Importer] {
        let tree = Set(ContentType.tree(of: type))
        return table.filter { importer in importer.contentTypes.contains { tree.contains($0) } }
    }

    /// Every attribute some importer fills, and the importers filling it.
    package static func attributes(in importers: [any Importer]) -> [MetadataAttribute: [String]] {
        var table: [MetadataAttribute: [String]] = [:]
        for importer in importers {
            for attribute in importer.attributes { table[attribute, default: []].append(importer.name) }
        }
        return table
    }
}
