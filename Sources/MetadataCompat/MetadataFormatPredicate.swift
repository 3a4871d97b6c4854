import Foundation
import MetadataIndex

/// The `NSPredicate` that `NSPredicate(format:...)` makes here: the format
/// parsed by `MetadataPredicate(format:arguments:)` when it is made, or the
/// error that parsing gave.
///
/// Apple's initializer raises an Objective-C exception on a malformed
/// format; this one keeps the error instead, and a query given the
/// predicate refuses to start (`NSMetadataQuery.start()` returns false and
/// `errors` says why), so a bad format is reported, not a crash.
final class MetadataFormatPredicate: NSPredicate {
    /// The format as written.
    let format: String
    /// The parsed predicate, or why the format could not be used.
    let parsed: Result<MetadataPredicate, MetadataError>

    init(format: String, arguments: [Any?]) {
        self.format = format
        do throws(MetadataError) {
            let values = try arguments.map { (argument) throws(MetadataError) in try PredicateArgument(apple: argument)
            }
            parsed = .success(try MetadataPredicate(format: format, arguments: values))
        } catch {
            parsed = .failure(error)
        }
        // Foundation's designated initializer; this class overrides what
        // the value would decide (evaluation, format, equality).
        super.init(value: false)
    }

    /// The parsed predicate in format syntax (`kMDItemFSName LIKE "*.txt"`),
    /// or the format as written when it could not be parsed.
    override var predicateFormat: String {
        switch parsed {
        case .success(let predicate): predicate.predicateFormat
        case .failure: format
        }
    }

    override var description: String { predicateFormat }

    /// Whether `object` (an `NSMetadataItem`) matches; false for other
    /// objects and for a format that could not be parsed.
    override func evaluate(with object: Any?, substitutionVariables bindings: [String: Any]?) -> Bool {
        guard case .success(let predicate) = parsed, let item = (object as? NSMetadataItem)?.metadataItem else {
            return false
        }
        return item.matches(predicate)
    }

    /// Equal to another format predicate that parsed to the same predicate
    /// (or, unparsed, has the same format).
    override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? MetadataFormatPredicate else { return false }
        switch (parsed, other.parsed) {
        case (.success(let a), .success(let b)): return a == b
        case (.failure, .failure): return format == other.format
        default: return false
        }
    }

    override var hash: Int { predicateFormat.hashValue }

    /// Immutable: a copy is the predicate itself.
    override func copy(with zone: NSZone? = nil) -> Any { self }
}
