public import Foundation

/// One value of a value-list attribute and how many results have it:
/// Apple's `NSMetadataQueryAttributeValueTuple`.
open class NSMetadataQueryAttributeValueTuple: NSObject, @unchecked Sendable {
    // `@unchecked`: immutable after init.

    /// The attribute's key.
    public let attribute: String
    /// The value (as `NSMetadataItem.value(forAttribute:)` gives it, or the
    /// delegate's replacement); nil for the results without the attribute.
    public let value: Any?
    /// How many results have the value.
    public let count: Int

    init(attribute: String, value: Any?, count: Int) {
        self.attribute = attribute
        self.value = value
        self.count = count
        super.init()
    }
}
