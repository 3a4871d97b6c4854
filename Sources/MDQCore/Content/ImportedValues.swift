/// Attribute values an import produced, by attribute.
package struct ImportedValues: Sendable, Equatable {
    package private(set) var values: [MetadataAttribute: AttributeValue] = [:]

    package init() {}

    package subscript(attribute: MetadataAttribute) -> AttributeValue? {
        get { values[attribute] }
        set { values[attribute] = newValue }
    }

    /// Adds `other`'s values; where both have one, `other`'s wins.
    package mutating func merge(_ other: ImportedValues) {
        values.merge(other.values) { _, new in new }
    }

    package var isEmpty: Bool { values.isEmpty }

    /// Only the values of `attributes`.
    package func restricted(to attributes: Set<MetadataAttribute>) -> ImportedValues {
        var kept = ImportedValues()
        kept.values = values.filter { attributes.contains($0.key) }
        return kept
    }
}
