/// The one table of importers: each declares the content types it handles
/// and the attributes it fills; a file is given to every importer whose
/// types its type conforms to, in this order (later values win).
enum ImporterRegistry {
    static let importers: [any Importer] = [
        ExtendedAttributeImporter(),
        TextImporter(),
    ]

    /// The importers for a file of type `type`.
    static func importers(for type: String) -> [any Importer] {
        let tree = Set(ContentType.tree(of: type))
        return importers.filter { importer in importer.contentTypes.contains { tree.contains($0) } }
    }

    /// Every attribute some importer fills, and the importers filling it.
    static var attributes: [MetadataAttribute: [String]] {
        var table: [MetadataAttribute: [String]] = [:]
        for importer in importers {
            for attribute in importer.attributes { table[attribute, default: []].append(importer.name) }
        }
        return table
    }
}
