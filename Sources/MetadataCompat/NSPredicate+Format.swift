public import Foundation
import MetadataIndex

/// How MetadataCompat gives `NSPredicate` Apple's format initializers.
///
/// swift-corelibs-foundation declares `NSPredicate(format:...)` but marks
/// it unavailable. An initializer with the same signature in a protocol
/// extension is chosen over an unavailable one without ambiguity, and a
/// protocol extension's initializer may return another object (a subclass
/// that carries the parsed metadata predicate); `NSPredicate` is the only
/// type meant to conform.
public protocol MetadataPredicateFormatting {}

extension NSPredicate: MetadataPredicateFormatting {}

extension MetadataPredicateFormatting where Self == NSPredicate {
    /// A predicate from Apple's format syntax with substitutions, as Apple
    /// code writes it: `NSPredicate(format: "%K LIKE %@",
    /// NSMetadataItemFSNameKey, "*.txt")`.
    ///
    /// `%K` takes a key; `%@` a `String`, number, `Bool`, `Date`, `URL`,
    /// array or set; `%d`/`%i`/`%ld` an integer; `%f` a number (see
    /// `MetadataPredicate(format:arguments:)` for the syntax).
    ///
    /// - Parameters:
    ///   - predicateFormat: the format.
    ///   - args: the values substituted, in order.
    ///
    /// A malformed format does not trap (Apple's raises an exception): the
    /// error is kept, `predicateFormat` is the text as given, and a query
    /// given the predicate does not start (`NSMetadataQuery.errors` says
    /// why).
    public init(format predicateFormat: String, _ args: Any...) {
        self = MetadataFormatPredicate(format: predicateFormat, arguments: args)
    }

    /// A predicate from Apple's format syntax with substitutions taken from
    /// an array, as `init(format:_:)` does.
    ///
    /// - Parameters:
    ///   - predicateFormat: the format.
    ///   - arguments: the values substituted, in order.
    public init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        self = MetadataFormatPredicate(format: predicateFormat, arguments: arguments ?? [])
    }
}

extension NSPredicate {
    /// The metadata predicate this `NSPredicate` stands for: a format
    /// predicate's parse, `NSPredicate(value:)` as always true or false, and
    /// an `NSCompoundPredicate` of those combined with AND, OR or NOT (a
    /// NOT of several subpredicates negates their AND).
    ///
    /// - Throws: `MetadataError`: the parse error of a format that could not
    ///   be parsed; `.invalidArgument` for a block predicate
    ///   (`NSPredicate(block:)`), which a metadata query cannot evaluate.
    var metadataPredicate: MetadataPredicate {
        get throws(MetadataError) {
            if let format = self as? MetadataFormatPredicate { return try format.parsed.get() }
            if let compound = self as? NSCompoundPredicate {
                var parts: [MetadataPredicate] = []
                for part in compound.subpredicates { parts.append(try part.metadataPredicate) }
                switch compound.compoundPredicateType {
                case .and: return .all(of: parts)
                case .or: return .any(of: parts)
                case .not: return !(.all(of: parts))
                @unknown default: throw .unsupported("an NSCompoundPredicate of an unknown type")
                }
            }
            if isEqual(NSPredicate(value: true)) { return .alwaysTrue }
            if isEqual(NSPredicate(value: false)) { return .alwaysFalse }
            throw .unsupported(
                "a block predicate (NSPredicate(block:)) cannot be used in a metadata query; use NSPredicate(format:)")
        }
    }
}
