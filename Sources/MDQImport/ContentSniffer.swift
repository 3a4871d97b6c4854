import MDQCore
import MDQSystem

/// The content type of a file from its leading bytes, for when its
/// extension is missing or lies (a PNG named `scan.dat` is `public.png`).
///
/// A signature table of the formats mdq imports, not a general `file(1)`:
/// the importers need to know which of *their* formats a file is, fast and
/// without a database to load (libmagic's takes milliseconds to open and
/// knows thousands of formats mdq has no importer for).
///
/// Signatures are strong or weak. A strong one (PNG, JPEG, GIF, PDF, FLAC,
/// WebP, a ZIP whose `mimetype` names an OpenDocument or EPUB type) names
/// one format: it wins over any extension that does not conform to it. A
/// weak one names a container several formats share (TIFF under camera raw
/// files, ZIP under OOXML and app packages, ISO media under MP4 and HEIC,
/// Ogg, Matroska, MPEG audio frames): it wins only over an unknown
/// extension or one claiming plain content of another family (text, image,
/// audio and video; an image named `.txt`), so a `.cr2` stays a Canon raw
/// image, a `.m4a` stays audio and a `.key` stays Keynote.
///
/// Text has no signature: a file of unknown type whose head is valid UTF-8
/// (or UTF-16 with a byte order mark) without NUL bytes is
/// `public.plain-text`, or HTML / XML / SVG when it starts like them.
enum ContentSniffer {
    /// Bytes of the head the sniffer reads.
    static let headLength = 4096

    /// A sniffed type and whether it names one format (strong) or a
    /// container (weak).
    struct Sniffed: Equatable {
        var identifier: String
        var strong: Bool
    }

    /// The type the leading bytes name, if any.
    ///
    /// - Parameter head: the file's first bytes (up to `headLength`).
    static func sniff(_ head: [UInt8]) -> Sniffed? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + prefix.count && head[offset..<offset + prefix.count].elementsEqual(prefix)
        }
        func ascii(_ text: String, at offset: Int = 0) -> Bool { starts(Array(text.utf8), at: offset) }
        func strong(_ identifier: String) -> Sniffed { Sniffed(identifier: identifier, strong: true) }
        func weak(_ identifier: String) -> Sniffed { Sniffed(identifier: identifier, strong: false) }

        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return strong("public.png") }
        if starts([0xFF, 0xD8, 0xFF]) { return strong("public.jpeg") }
        if ascii("GIF87a") || ascii("GIF89a") { return strong("com.compuserve.gif") }
        if ascii("%PDF-") { return strong("com.adobe.pdf") }
        if ascii("fLaC") { return strong("org.xiph.flac") }
        if ascii("RIFF") && head.count >= 12 {
            if ascii("WEBP", at: 8) { return strong("org.webmproject.webp") }
            if ascii("WAVE", at: 8) { return strong("com.microsoft.waveform-audio") }
            if ascii("AVI ", at: 8) { return strong("public.avi") }
        }
        if ascii("II*\u{0}") || ascii("MM\u{0}*") { return weak("public.tiff") }
        if ascii("ftyp", at: 4), head.count >= 12 {
            let brand = String(decoding: head[8..<12], as: UTF8.self)
            switch brand {
            case "heic", "heix", "hevc", "heim", "heis": return weak("public.heic")
            case "mif1", "msf1": return weak("public.heif")
            case "avif", "avis": return weak("public.avif")
            case "M4A ": return weak("com.apple.m4a-audio")
            case "M4V ", "M4VH", "M4VP": return weak("com.apple.m4v-video")
            case "qt  ": return weak("com.apple.quicktime-movie")
            case "crx ": return weak("com.canon.cr3-raw-image")
            case "3gp4", "3gp5", "3gp6", "3ge6", "3gs6": return weak("public.3gpp")
            default: return weak("public.mpeg-4")
            }
        }
        if ascii("OggS") {
            if contains(head, "OpusHead") || contains(head, "\u{01}vorbis") || contains(head, "Speex") {
                return weak("org.xiph.ogg-audio")
            }
            if contains(head, "theora") { return weak("org.xiph.ogg-video") }
            return weak("org.xiph.ogg-audio")
        }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) {
            return weak(contains(head, "webm") ? "org.webmproject.webm" : "org.matroska.mkv")
        }
        if ascii("ID3") { return strong("public.mp3") }
        if head.count >= 2, head[0] == 0xFF, head[1] & 0xE6 == 0xE2 {
            // An MPEG audio frame header (sync bits, layer III): weak, as
            // other binary data can start the same way.
            return weak("public.mp3")
        }
        if ascii("PK\u{03}\u{04}") { return zip(head) }
        if starts([0x1F, 0x8B]) { return weak("org.gnu.gnu-zip-archive") }
        if ascii("BZh") { return weak("public.bzip2-archive") }
        if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { return weak("org.tukaani.xz-archive") }
        if starts([0x28, 0xB5, 0x2F, 0xFD]) { return weak("org.zstandard.zstd-archive") }
        if starts([0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]) { return strong("org.7-zip.7-zip-archive") }
        if ascii("Rar!\u{1A}\u{07}") { return strong("com.rarlab.rar-archive") }
        if starts([0x7F, 0x45, 0x4C, 0x46]) { return weak("public.elf-binary") }
        return text(head)
    }

    /// The type of a file named `name` whose head is `head`: the sniffed
    /// type when it should win over the extension's (see the type's
    /// discussion), else the extension's.
    static func refinedType(name: [UInt8], head: [UInt8]) -> String {
        let byName = ContentType.identifier(forName: name, kind: .file)
        guard let sniffed = sniff(head), sniffed.identifier != byName else { return byName }
        if ContentType.conforms(byName, to: sniffed.identifier) { return byName }
        if byName == "public.data" || sniffed.strong { return sniffed.identifier }
        // Weak: the extension loses only when it claims plain content of
        // another family (an image named `.txt`); a document, package or
        // archive type may well be a container the signature shares.
        let families = ["public.text", "public.image", "public.audiovisual-content"]
        let claimed = families.first { ContentType.conforms(byName, to: $0) }
        guard let claimed, !ContentType.conforms(sniffed.identifier, to: claimed) else { return byName }
        return sniffed.identifier
    }

    /// A ZIP's own format: EPUB and OpenDocument name it in a first,
    /// stored `mimetype` entry (their specifications require it); OOXML
    /// has `[Content_Types].xml` and a `word/`, `xl/` or `ppt/` part among
    /// the first entries' names.
    private static func zip(_ head: [UInt8]) -> Sniffed {
        if head.count >= 38, String(decoding: head[30..<38], as: UTF8.self) == "mimetype" {
            let extra = Int(head[28]) | Int(head[29]) << 8
            let start = 38 + extra
            if start < head.count {
                let value = String(decoding: head[start..<min(head.count, start + 80)], as: UTF8.self)
                let byMime: [(String, String)] = [
                    ("application/epub+zip", "org.idpf.epub-container"),
                    ("application/vnd.oasis.opendocument.text", "org.oasis-open.opendocument.text"),
                    ("application/vnd.oasis.opendocument.spreadsheet", "org.oasis-open.opendocument.spreadsheet"),
                    ("application/vnd.oasis.opendocument.presentation", "org.oasis-open.opendocument.presentation"),
                    ("application/vnd.oasis.opendocument.graphics", "org.oasis-open.opendocument.graphics"),
                ]
                for (mime, identifier) in byMime where value.hasPrefix(mime) {
                    return Sniffed(identifier: identifier, strong: true)
                }
            }
        }
        if contains(head, "[Content_Types].xml") {
            if contains(head, "word/") {
                return Sniffed(identifier: "org.openxmlformats.wordprocessingml.document", strong: false)
            }
            if contains(head, "xl/") {
                return Sniffed(identifier: "org.openxmlformats.spreadsheetml.sheet", strong: false)
            }
            if contains(head, "ppt/") {
                return Sniffed(identifier: "org.openxmlformats.presentationml.presentation", strong: false)
            }
        }
        return Sniffed(identifier: "public.zip-archive", strong: false)
    }

    /// Text of an unknown type: UTF-8 (a multi-byte sequence cut by the end
    /// of the head is fine) or UTF-16 with a byte order mark, no NUL bytes
    /// in UTF-8; HTML, SVG and XML by their first tag.
    private static func text(_ head: [UInt8]) -> Sniffed? {
        guard !head.isEmpty else { return nil }
        if head.count >= 2 && (head[0] == 0xFF && head[1] == 0xFE || head[0] == 0xFE && head[1] == 0xFF) {
            return Sniffed(identifier: "public.plain-text", strong: false)
        }
        guard !head.contains(0), TextDecoding.isUTF8(head, allowingTruncatedEnd: true) else { return nil }
        var start = head.startIndex
        if head.starts(with: [0xEF, 0xBB, 0xBF]) { start += 3 }
        while start < head.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(head[start]) { start += 1 }
        let opening = String(decoding: head[start..<min(head.endIndex, start + 512)], as: UTF8.self).lowercased()
        if opening.hasPrefix("<!doctype html") || opening.hasPrefix("<html") {
            return Sniffed(identifier: "public.html", strong: false)
        }
        if opening.hasPrefix("<svg") || opening.hasPrefix("<?xml") && opening.contains("<svg") {
            return Sniffed(identifier: "public.svg-image", strong: false)
        }
        if opening.hasPrefix("<?xml") { return Sniffed(identifier: "public.xml", strong: false) }
        return Sniffed(identifier: "public.plain-text", strong: false)
    }

    private static func contains(_ head: [UInt8], _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard needle.count <= head.count else { return false }
        for start in 0...(head.count - needle.count) where head[start] == needle[0] {
            if head[start..<start + needle.count].elementsEqual(needle) { return true }
        }
        return false
    }
}
