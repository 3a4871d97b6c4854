public import Foundation

/// Results that share a value of a grouping attribute, with subgroups for
/// the next grouping attribute: Apple's `NSMetadataQueryResultGroup`.
open class NSMetadataQueryResultGroup: NSObject, @unchecked Sendable {
    // `@unchecked`: immutable after init; the result objects are what the
    // query reports, as shareable as its `results`.

    /// The grouping attribute's key.
    public let attribute: String
    /// The shared value (as `NSMetadataItem.value(forAttribute:)` gives it,
    /// or the delegate's replacement); `NSNull` for the results without it.
    public let value: Any
    /// The groups by the next grouping attribute; nil at the last level.
    public let subgroups: [NSMetadataQueryResultGroup]?
    /// The group's result objects, in the query's order.
    public let results: [Any]

    init(attribute: String, value: Any, subgroups: [NSMetadataQueryResultGroup]?, results: [Any]) {
        self.attribute = attribute
        self.value = value
        self.subgroups = subgroups
        self.results = results
        super.init()
    }

    /// The number of results in the group.
    public var resultCount: Int { results.count }

    /// The result object at `idx`.
    ///
    /// - Parameter idx: an index below `resultCount`.
    /// - Returns: the result object.
    public func result(at idx: Int) -> Any { results[idx] }
}
