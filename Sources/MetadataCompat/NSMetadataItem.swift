public import Foundation
public import MetadataIndex
import SystemPackage

/// A file or folder a metadata query found, with its attributes: Apple's
/// `NSMetadataItem`.
///
/// A query gives one object per result for the life of its run, as Apple's
/// does: the same object comes back from `results`, `result(at:)` and every
/// notification, through renames, moves and atomic saves, and it answers
/// with the attributes of the last update the query delivered. So objects
/// compare with `==` (identity), serve as dictionary keys, and
/// `index(ofResult:)` finds them. A removed result keeps the attributes it
/// last had.
///
/// `value(forAttribute:)` answers as Apple's does: `String`, `NSNumber`,
/// `Date`, `URL` or `[String]` (see `NSMetadataItemFSSizeKey` and the
/// other keys).
///
/// Thread safety: the attributes are read and replaced under a lock, so an
/// item may be read from any thread while its query updates it.
open class NSMetadataItem: NSObject, @unchecked Sendable {
    // `@unchecked`: the only mutable state is `snapshot`, a `Locked` value;
    // `run` is immutable.

    /// The attributes as last delivered; nil for an item a subclass makes
    /// with `init()` (it answers `value(forAttribute:)` itself).
    private let snapshot: Locked<MetadataItem?>
    /// The query run that made this object; nil outside a query.
    let run: QueryRun?

    /// An item for a result of a query run.
    init(_ item: MetadataItem, run: QueryRun?) {
        snapshot = Locked(item)
        self.run = run
        super.init()
    }

    /// An item with no attributes, for subclasses that answer
    /// `value(forAttribute:)` themselves (test doubles); no query returns it
    /// and `index(ofResult:)` does not find it.
    public override init() {
        snapshot = Locked(nil)
        run = nil
        super.init()
    }

    /// The item for the file or folder at `url`, read now (a symlink is
    /// described, not followed); the iCloud keys answer when it lies in a
    /// container under the containers root.
    ///
    /// - Parameter url: a file URL.
    /// - Returns: nil when `url` is not a file URL or nothing is there.
    public init?(url: URL) {
        guard url.isFileURL else { return nil }
        let path = FilePath(url.path)
        guard let item = try? MetadataItem(path: path, container: UbiquityContainer.container(holding: path)) else {
            return nil
        }
        snapshot = Locked(item)
        run = nil
        super.init()
    }

    /// The attributes as `MetadataIndex` describes them (the snapshot
    /// `value(forAttribute:)` reads); nil for an item made with `init()`.
    public var metadataItem: MetadataItem? { snapshot.withLock { $0 } }

    /// Replaces the attributes with a later snapshot of the same result.
    func update(_ item: MetadataItem) {
        snapshot.withLock { $0 = item }
    }

    /// The value of an attribute, as Apple's `NSMetadataItem` returns it:
    /// `String` for names, paths and types, `URL` for
    /// `NSMetadataItemURLKey`, `NSNumber` for sizes, percentages and
    /// booleans (so `as? Int64`, `as? Int`, `as? Double`, `as? NSNumber`
    /// and, for booleans, `as? Bool` succeed), `Date` for dates, `[String]`
    /// for the type tree.
    ///
    /// - Parameter key: an `NSMetadataItem...Key` constant or its raw
    ///   string (`kMDItemFSName`).
    /// - Returns: the value; nil when the item has none (a folder's size,
    ///   the iCloud keys outside a container, a key mdq does not read).
    open func value(forAttribute key: String) -> Any? {
        guard let attribute = MetadataAttribute(key: key) else { return nil }
        return metadataItem?.value(of: attribute)?.appleValue
    }

    /// The values of several attributes, keyed by the keys asked for; keys
    /// without a value are left out.
    ///
    /// - Parameter keys: attribute keys.
    /// - Returns: the values found (an empty dictionary when none is).
    open func values(forAttributes keys: [String]) -> [String: Any]? {
        var values: [String: Any] = [:]
        for key in keys { values[key] = value(forAttribute: key) }
        return values
    }

    /// The keys this item has a value for, in the attribute table's order.
    open var attributes: [String] { metadataItem?.attributes ?? [] }

    open override var description: String {
        "<NSMetadataItem \(metadataItem.map { String(decoding: $0.pathBytes, as: UTF8.self) } ?? "(no path)")>"
    }
}

/// One run of a query, from `start()` to the next start: the items of a run
/// belong to it, so an item of an earlier run is not found by
/// `index(ofResult:)` (result identities start anew with each run).
final class QueryRun: Sendable {}
