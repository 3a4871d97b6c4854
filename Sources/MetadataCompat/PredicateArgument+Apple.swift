import Foundation
import MetadataIndex

extension PredicateArgument {
    /// A value as Apple code passes it to `NSPredicate(format:)`: a key or
    /// text (`String`, `NSString`), a number (`Int`, `Double`, `NSNumber`:
    /// an `NSNumber` made from a `Bool` is a boolean), `Bool`, a date
    /// (`Date`, `NSDate`), a URL (compared as its `absoluteString`, which is
    /// how `kMDItemURL` compares), an array or set (for `IN` and
    /// `BETWEEN`), or nil / `NSNull`.
    ///
    /// - Parameter value: the argument.
    /// - Throws: `MetadataError` `.invalidArgument` naming the type of a
    ///   value a metadata predicate cannot compare with.
    init(apple value: Any?) throws(MetadataError) {
        guard let value, !(value is NSNull) else {
            self = .null
            return
        }
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
            self = Self(number)
            return
        }
        switch value {
        case let text as String: self = .string(text)
        case let date as Date: self = .date(date)
        case let url as URL: self = .string(url.absoluteString)
        case let convertible as any PredicateArgumentConvertible: self = convertible.predicateArgument
        case let integer as any BinaryInteger: self = .integer(Int(clamping: integer))
        case let real as any BinaryFloatingPoint: self = .double(Double(real))
        case let list as [Any]:
            self = .list(try list.map { (element) throws(MetadataError) in try Self(apple: element) })
        case let set as Set<AnyHashable>:
            self = .list(try set.map { (element) throws(MetadataError) in try Self(apple: element.base) })
        default:
            throw .unsupported("a predicate cannot compare with a value of type \(type(of: value))")
        }
    }

    /// An `NSNumber` by what it holds: a boolean (`c`, `B`), a real (`f`,
    /// `d`), else an integer.
    private init(_ number: NSNumber) {
        switch String(cString: number.objCType) {
        case "c", "B": self = .bool(number.boolValue)
        case "f", "d": self = .double(number.doubleValue)
        case "Q", "L": self = .integer(Int(clamping: number.uint64Value))
        default: self = .integer(Int(clamping: number.int64Value))
        }
    }
}
