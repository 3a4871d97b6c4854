public import Foundation
import MDQSystem

/// A value substituted for `%@`, `%d`, `%f` (or a key for `%K`) in
/// `MetadataPredicate(format:_:)`.
public enum PredicateArgument: Sendable, Hashable {
    case string(String)
    /// Raw bytes, for names that are not UTF-8.
    case bytes([UInt8])
    case integer(Int)
    case double(Double)
    case date(Date)
    case bool(Bool)
    case list([PredicateArgument])
    case null
}

/// Types that can be passed to `MetadataPredicate(format:_:)`.
public protocol PredicateArgumentConvertible {
    var predicateArgument: PredicateArgument { get }
}

extension String: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .string(self) }
}
extension Substring: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .string(String(self)) }
}
extension Int: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .integer(self) }
}
extension Int64: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .integer(Int(self)) }
}
extension UInt64: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .integer(Int(clamping: self)) }
}
extension Double: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .double(self) }
}
extension Bool: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .bool(self) }
}
extension Date: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .date(self) }
}
extension MetadataAttribute: PredicateArgumentConvertible {
    /// As a `%K` key.
    public var predicateArgument: PredicateArgument { .string(rawValue) }
}
extension Array: PredicateArgumentConvertible where Element: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { .list(map(\.predicateArgument)) }
}
extension Optional: PredicateArgumentConvertible where Wrapped: PredicateArgumentConvertible {
    public var predicateArgument: PredicateArgument { self?.predicateArgument ?? .null }
}
