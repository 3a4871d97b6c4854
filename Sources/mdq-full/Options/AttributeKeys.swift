import ArgumentParser
import MDQLive
import MetadataIndex

/// The attribute keys the command line accepts, for validation, shell
/// completion and `--list-attributes`.
///
/// The one place the command reads the library's list of keys, so it
/// follows the library's attribute table wherever that lives.
enum AttributeKeys {
    /// Every key, by Apple's raw string.
    static var all: [String] { MetadataItem.knownKeys }

    /// Whether `key` names an attribute (a raw key or an
    /// `NSMetadataItem...Key` spelling).
    static func isKnown(_ key: String) -> Bool {
        all.contains(key) || MetadataAttribute(key: key) != nil
    }

    /// Shell completion for an option taking a key.
    static var completion: CompletionKind { .list(all) }

    /// Shell completion for `--sort`: each key, and each with `:desc`.
    static var sortCompletion: CompletionKind { .list(all + all.map { $0 + ":desc" }) }
}
