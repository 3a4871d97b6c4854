public import Foundation

/// What a query's delegate may substitute: Apple's
/// `NSMetadataQueryDelegate`.
///
/// Apple's methods are optional; here each has a default that substitutes
/// nothing, so a delegate implements only the ones it needs. The query
/// calls them without holding a lock, on the thread that asks for results
/// (or posts the notification), and keeps the object a delegate returns
/// for a result for as long as it is a result.
public protocol NSMetadataQueryDelegate: NSObjectProtocol {
    /// The object to report in place of a result item: in `results`,
    /// `result(at:)`, grouped results and the did-update notifications.
    ///
    /// - Parameters:
    ///   - query: the query.
    ///   - result: the result item.
    /// - Returns: the object to report (the item itself by default).
    func metadataQuery(_ query: NSMetadataQuery, replacementObjectForResultObject result: NSMetadataItem) -> Any

    /// The value to report in place of an attribute's value: in
    /// `value(ofAttribute:forResultAt:)`, `valueLists` and
    /// `groupedResults`.
    ///
    /// - Parameters:
    ///   - query: the query.
    ///   - attrName: the attribute key.
    ///   - attrValue: the value as the item has it.
    /// - Returns: the value to report (`attrValue` by default).
    func metadataQuery(_ query: NSMetadataQuery, replacementValueForAttribute attrName: String, value attrValue: Any)
        -> Any
}

extension NSMetadataQueryDelegate {
    /// Substitutes nothing: the item itself.
    public func metadataQuery(_ query: NSMetadataQuery, replacementObjectForResultObject result: NSMetadataItem) -> Any
    {
        result
    }

    /// Substitutes nothing: the value itself.
    public func metadataQuery(
        _ query: NSMetadataQuery, replacementValueForAttribute attrName: String, value attrValue: Any
    ) -> Any {
        attrValue
    }
}
