import Foundation
import MDQCore
import MDQLive
import MDQSystem

/// One value of a value-list attribute and how many results have it
/// (`NSMetadataQueryAttributeValueTuple`); `value` is nil for the results
/// that lack the attribute.
public struct MetadataQueryAttributeValueTuple: Sendable, CustomStringConvertible {
    /// The value-list attribute's key.
    public let attribute: String
    /// The typed value; nil for "no value".
    public let attributeValue: AttributeValue?
    /// How many results have the value.
    public let count: Int

    /// The value as Apple's tuple holds it: `String`, `Int`, `Double`,
    /// `Bool`, `Date`, `URL` or `[String]`; nil for "no value".
    public var value: Any? { attributeValue?.foundationValue }

    /// `attribute = value: count`, for people.
    public var description: String { "\(attribute) = \(value.map { "\($0)" } ?? "(null)"): \(count)" }
}

/// Results that share a value of a grouping attribute
/// (`NSMetadataQueryResultGroup`), with subgroups for the next attribute.
public struct MetadataQueryResultGroup: Sendable {
    /// The grouping attribute's key.
    public let attribute: String
    /// The shared typed value; nil for the results that lack the attribute.
    public let attributeValue: AttributeValue?
    /// Groups by the next grouping attribute; nil at the last level.
    public let subgroups: [MetadataQueryResultGroup]?
    /// The group's results, in the query's order.
    public let results: [MetadataItem]

    /// The shared value as Apple's group holds it (see
    /// `MetadataQueryAttributeValueTuple.value`); nil for "no value".
    public var value: Any? { attributeValue?.foundationValue }
    /// How many results the group holds.
    public var resultCount: Int { results.count }
    /// The group's result at `index` (in the query's order).
    public func result(at index: Int) -> MetadataItem { results[index] }
}

/// An item's value of a grouping or value-list key; nil (missing, or a key
/// mdq does not know) is a key of its own.
private func groupKey(_ item: MetadataItem, _ attribute: MetadataAttribute?) -> AttributeValue? {
    attribute.flatMap { item.value(of: $0) }
}

extension MetadataQuery {
    /// Attributes whose values are counted in `valueLists`. Changing them on
    /// a running query restarts it.
    public var valueListAttributes: [String] {
        get { state.withLock { $0.configuration.valueListAttributes } }
        set { reconfigure { $0.valueListAttributes = newValue } }
    }

    /// Attributes to group results by, outermost first. Changing them on a
    /// running query restarts it.
    public var groupingAttributes: [String] {
        get { state.withLock { $0.configuration.groupingAttributes } }
        set { reconfigure { $0.groupingAttributes = newValue } }
    }

    /// For each value-list attribute, its distinct values among the current
    /// results with their counts (most frequent first, the missing value as
    /// a tuple whose `value` is nil).
    ///
    /// Derived from the current results on each read, so it is always as
    /// live as `results` (and frozen with them while updates are
    /// disabled); each read costs O(results).
    public var valueLists: [String: [MetadataQueryAttributeValueTuple]] {
        let (attributes, items) = state.withLock { ($0.configuration.valueListAttributes, $0.results.visible) }
        var lists: [String: [MetadataQueryAttributeValueTuple]] = [:]
        for attribute in attributes {
            let known = MetadataAttribute(key: attribute)
            var counts: [AttributeValue?: Int] = [:]
            var order: [AttributeValue?] = []
            for item in items {
                let key = groupKey(item, known)
                if counts[key] == nil { order.append(key) }
                counts[key, default: 0] += 1
            }
            let ranked = order.enumerated().sorted { a, b in
                let (ca, cb) = (counts[a.element]!, counts[b.element]!)
                return ca != cb ? ca > cb : a.offset < b.offset
            }
            lists[attribute] = ranked.map {
                MetadataQueryAttributeValueTuple(
                    attribute: attribute, attributeValue: $0.element, count: counts[$0.element]!)
            }
        }
        return lists
    }

    /// The current results grouped by `groupingAttributes`, nested one
    /// level per attribute; groups in order of first appearance in the
    /// results (so a sorted query gives sorted groups). Derived on read,
    /// like `valueLists`.
    public var groupedResults: [MetadataQueryResultGroup] {
        let (attributes, items) = state.withLock { ($0.configuration.groupingAttributes, $0.results.visible) }
        return Self.group(items, by: attributes[...])
    }

    private static func group(_ items: [MetadataItem], by attributes: ArraySlice<String>) -> [MetadataQueryResultGroup]
    {
        guard let attribute = attributes.first else { return [] }
        let known = MetadataAttribute(key: attribute)
        var members: [AttributeValue?: [MetadataItem]] = [:]
        var order: [AttributeValue?] = []
        for item in items {
            let key = groupKey(item, known)
            if members[key] == nil { order.append(key) }
            members[key, default: []].append(item)
        }
        let rest = attributes.dropFirst()
        return order.map { key in
            let results = members[key]!
            return MetadataQueryResultGroup(
                attribute: attribute, attributeValue: key, subgroups: rest.isEmpty ? nil : group(results, by: rest),
                results: results)
        }
    }
}
