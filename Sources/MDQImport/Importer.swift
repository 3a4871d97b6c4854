package import MDQCore
package import MDQSystem
package import SystemPackage

/// One family of file formats mdq reads metadata from: the content types it
/// handles (a file whose type conforms to one of them is its), the
/// attributes it fills, and the extraction itself.
///
/// Importers are registered in one table (`ImporterRegistry`). An importer
/// reads the file only through the `ContentFile` it is given, whose byte
/// budget bounds what it can read, and reports a file it cannot read as an
/// `ImportFailure` with a reason, never a crash: hostile files are expected
/// (a truncated PDF, a zip bomb, a binary named `.txt`).
package protocol Importer: Sendable {
    /// A short name for messages and `mdq import` (`text`, `pdf`).
    var name: String { get }
    /// Uniform type identifiers the importer handles; a file whose type
    /// tree contains one of them is given to it.
    var contentTypes: [String] { get }
    /// The attributes it may fill.
    var attributes: [MetadataAttribute] { get }
    /// The attribute values of `file`, whose type (after sniffing) is
    /// `type`.
    ///
    /// - Throws: `ImportFailure` with a one-line reason when the file is
    ///   malformed, encrypted, too large or not of the type it claims.
    func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure) -> ImportedValues
    /// Loads now what the importer would otherwise load on its first file
    /// (data files, modules, a library's lazily set-up state): the import
    /// worker calls it before it sandboxes itself, after which it can open
    /// no file at all.
    func prepareForConfinement()
    /// Folders of read-only data the importer's library reads on demand
    /// and that cannot be loaded beforehand: the sandbox leaves them, and
    /// nothing else, readable.
    var dataFolders: [FilePath] { get }
}

extension Importer {
    /// Nothing to load: the importer needs no file but the one it reads.
    package func prepareForConfinement() {}

    /// None.
    package var dataFolders: [FilePath] { [] }
}

/// What an import may spend on one file.
package struct ImportLimits: Sendable, Hashable {
    /// Bytes an importer may read from the file (a 10 GB "text" file
    /// yields its first part, never all of it).
    package var bytesRead: Int
    /// UTF-8 bytes of `kMDItemTextContent` kept per file: enough for the
    /// words of a long document, small enough that stored text stays a
    /// fraction of the corpus.
    package var textBytes: Int
    /// Pixels an image may claim (width × height) before its header is
    /// taken as hostile.
    package var pixels: Int

    /// 16 MiB read, 1 MiB of text, 2^31 pixels.
    package static let standard = ImportLimits(bytesRead: 16 << 20, textBytes: 1 << 20, pixels: 1 << 31)

    package init(bytesRead: Int, textBytes: Int, pixels: Int) {
        self.bytesRead = bytesRead
        self.textBytes = textBytes
        self.pixels = pixels
    }
}

/// Why a file could not be imported, in one line ("binary content in a text
/// file", "truncated PDF"); recorded so the file is not retried until it
/// changes.
package struct ImportFailure: Error, Sendable, Hashable, CustomStringConvertible {
    package var reason: String
    /// The file was not tried (no worker could start): try again later
    /// rather than record the failure against the file.
    package var isTransient: Bool

    package init(_ reason: String, isTransient: Bool = false) {
        self.reason = reason
        self.isTransient = isTransient
    }

    package var description: String { reason }
}
