package import MDQCore
package import MDQSystem

/// The freedesktop extended attributes of every file: where it was
/// downloaded from (`user.xdg.origin.url`, then `user.xdg.referrer.url`, as
/// `kMDItemWhereFroms` lists the download and the page it came from), the
/// user's tags (`user.xdg.tags`, comma-separated) and comment
/// (`user.xdg.comment`). Browsers (Chromium, Firefox) and `wget
/// --xattr` write the origin; file managers write tags and comments.
package struct ExtendedAttributeImporter: Importer {
    package var name: String { "xattr" }
    package var contentTypes: [String] { ["public.item"] }
    package var attributes: [MetadataAttribute] { Self.attributes.sorted { $0.rawValue < $1.rawValue } }

    package func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure)
        -> ImportedValues
    {
        Self.values(of: file)
    }

    /// The attributes this importer fills.
    package static let attributes: Set<MetadataAttribute> = [.whereFroms, .userTags, .comment]

    /// What the file's extended attributes say (reading nothing else): the
    /// content indexer calls it in the daemon when only they changed, an
    /// `IN_ATTRIB` with the same modification time and size.
    package static func values(of file: ContentFile) -> ImportedValues {
        var values = ImportedValues()
        let names = Set(file.extendedAttributeNames())
        guard !names.isEmpty else { return values }
        func text(_ name: String) -> String? {
            guard names.contains(name), let bytes = file.extendedAttribute(name) else { return nil }
            let value = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self).trimmingWhitespace()
            return value.isEmpty ? nil : value
        }
        let origins = ["user.xdg.origin.url", "user.xdg.referrer.url"].compactMap(text)
        if !origins.isEmpty { values[.whereFroms] = .list(origins) }
        if let tags = text("user.xdg.tags") {
            let list = tags.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
            if !list.isEmpty { values[.userTags] = .list(list) }
        }
        if let comment = text("user.xdg.comment") { values[.comment] = .text(Array(comment.utf8)) }
        return values
    }
}
