public import Foundation
import MetadataIndex

/// Apple's `NSFileVersion` conflict API over the conflict copies sync tools
/// leave beside a file (`name (conflicted copy ...).ext` as Dropbox and
/// Nextcloud write them, `name.sync-conflict-....ext` as Syncthing does):
/// the calls a sync client makes right after a query reports
/// `NSMetadataUbiquitousItemHasUnresolvedConflictsKey`.
///
/// - `currentVersionOfItem(at:)` is the file itself.
/// - `unresolvedConflictVersionsOfItem(at:)` lists its conflict copies (not
///   yet marked resolved in this process), newest first, each a version
///   whose `url` is the copy.
/// - `replaceItem(at:options:)` on a conflict version makes its content
///   the file's (copied to a temporary file beside it, then renamed over it:
///   never a half-written file).
/// - `isResolved = true` marks a conflict resolved; then
///   `removeOtherVersionsOfItem(at:)` deletes the copies marked resolved.
///   Apple's removes every other version; this one deletes only copies the
///   app has marked, so no user's copy is lost to a client that forgot one.
///   Once the copies are gone, queries report the conflict resolved.
/// - Versions other than conflict copies (Apple's version store) do not
///   exist here: `otherVersionsOfItem(at:)` is the conflict copies.
open class NSFileVersion: NSObject, @unchecked Sendable {
    // Mutable state (`isResolved`) is this version's own, as on Apple
    // platforms; the class-level record of resolved copies is locked.

    /// The version's file: the item itself, or a conflict copy.
    open private(set) var url: URL
    /// Whether this version is a conflict copy.
    open private(set) var isConflict: Bool
    /// The name shown for the version (the copy's file name).
    open var localizedName: String? { url.lastPathComponent }
    /// The computer that saved it: the text in a Dropbox-style copy's
    /// parentheses, else nil.
    open var localizedNameOfSavingComputer: String? {
        let name = url.lastPathComponent
        guard isConflict, let open = name.range(of: " ("),
            let close = name.range(of: ")", range: open.upperBound..<name.endIndex)
        else { return nil }
        return String(name[open.upperBound..<close.lowerBound])
    }
    /// When the version's file was last modified.
    open var modificationDate: Date? {
        (try? FileManager.default.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date
    }
    /// Always false: conflict copies are kept until removed.
    open var isDiscardable: Bool = false
    /// The version's identity: its file's path.
    open var persistentIdentifier: any NSCoding & NSObjectProtocol { NSString(string: url.path) }

    /// Marks the conflict resolved (or not): `unresolvedConflictVersionsOfItem`
    /// no longer lists it, and `removeOtherVersionsOfItem` deletes it.
    open var isResolved: Bool {
        get { !isConflict || Self.resolved.withLock { $0.contains(url.standardizedFileURL.path) } }
        set {
            guard isConflict else { return }
            let path = url.standardizedFileURL.path
            Self.resolved.withLock { set in
                if newValue { set.insert(path) } else { set.remove(path) }
            }
        }
    }

    private static let resolved = Locked<Set<String>>([])

    init(url: URL, isConflict: Bool) {
        self.url = url
        self.isConflict = isConflict
    }

    /// The item itself, or nil when nothing is at `url`.
    open class func currentVersionOfItem(at url: URL) -> NSFileVersion? {
        FileManager.default.fileExists(atPath: url.path) ? NSFileVersion(url: url, isConflict: false) : nil
    }

    /// The item's conflict copies, newest first; nil when the item does
    /// not exist.
    open class func otherVersionsOfItem(at url: URL) -> [NSFileVersion]? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let folder = url.deletingLastPathComponent()
        let name = Array(url.lastPathComponent.utf8)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let copies = names.filter { ConflictCopy.originalName(of: Array($0.utf8)) == name }
            .map { NSFileVersion(url: folder.appendingPathComponent($0), isConflict: true) }
        return copies.sorted { ($0.modificationDate ?? .distantPast) > ($1.modificationDate ?? .distantPast) }
    }

    /// The conflict copies not yet marked resolved.
    open class func unresolvedConflictVersionsOfItem(at url: URL) -> [NSFileVersion]? {
        otherVersionsOfItem(at: url)?.filter { !$0.isResolved }
    }

    /// Deletes the item's conflict copies marked resolved.
    ///
    /// - Throws: the file system's error for a copy that cannot be removed.
    open class func removeOtherVersionsOfItem(at url: URL) throws {
        for version in otherVersionsOfItem(at: url) ?? [] where version.isResolved {
            try version.remove()
        }
    }

    /// Options of `replaceItem(at:options:)`.
    public struct ReplacingOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Move the version's file instead of copying it.
        public static let byMoving = ReplacingOptions(rawValue: 1)
    }

    /// Makes this version's content the file at `url`'s: written beside it
    /// and renamed over it, so the file is never half written.
    ///
    /// - Returns: `url`.
    /// - Throws: the file system's error.
    @discardableResult
    open func replaceItem(at url: URL, options: ReplacingOptions = []) throws -> URL {
        guard url.standardizedFileURL != self.url.standardizedFileURL else { return url }
        let staging = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).mdq-replace-\(getpid())")
        try? FileManager.default.removeItem(at: staging)
        if options.contains(.byMoving) {
            try FileManager.default.moveItem(at: self.url, to: staging)
        } else {
            try FileManager.default.copyItem(at: self.url, to: staging)
        }
        if case .failure(let failure) = syscallResult({ rename(staging.path, url.path) }) {
            try? FileManager.default.removeItem(at: staging)
            throw POSIXError(POSIXErrorCode(rawValue: failure.rawValue) ?? .EIO)
        }
        return url
    }

    /// Deletes this version (a conflict copy).
    ///
    /// - Throws: `CocoaError(.fileWriteNoPermission)` for the current
    ///   version (removing it would delete the document), else the file
    ///   system's error.
    open func remove() throws {
        guard isConflict else { throw CocoaError(.fileWriteNoPermission) }
        try FileManager.default.removeItem(at: url)
        isResolved = false
    }
}
