import Foundation
import MetadataIndex

extension AttributeValue {
    /// The value as Apple's `NSMetadataItem` returns it: numbers and
    /// booleans as `NSNumber` (so `as? Int64`, `as? Int`, `as? Double` and,
    /// for booleans, `as? Bool` succeed, as they do with Apple's), dates as
    /// `Date`, the URL as `URL`, text as `String`, the type tree as
    /// `[String]`.
    var appleValue: Any {
        switch self {
        case .integer(let value): NSNumber(value: value)
        case .real(let value): NSNumber(value: value)
        case .bool(let value): NSNumber(value: value)
        case .text, .date, .url, .list: foundationValue
        }
    }
}
