import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Content types from leading bytes, and when they win over the extension.
struct ContentSnifferTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
    static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0, 16] + bytes("JFIF")
    static let tiff: [UInt8] = bytes("II*\u{0}") + [8, 0, 0, 0]
    static func ftyp(_ brand: String) -> [UInt8] { [0, 0, 0, 24] + bytes("ftyp" + brand) + [0, 0, 0, 0] }
    /// A ZIP whose first entry is a stored `mimetype` (EPUB, OpenDocument).
    static func zipWithMimetype(_ mime: String) -> [UInt8] {
        var header: [UInt8] = bytes("PK\u{03}\u{04}") + [UInt8](repeating: 0, count: 22)
        header += [8, 0, 0, 0]  // name length 8, extra length 0
        return header + bytes("mimetype") + bytes(mime)
    }
    static let docx: [UInt8] =
        bytes("PK\u{03}\u{04}") + [UInt8](repeating: 0, count: 22) + [19, 0, 0, 0] + bytes("[Content_Types].xml")
        + [UInt8](repeating: 0x41, count: 40) + bytes("PK\u{03}\u{04}word/document.xml")

    static let ogg: [UInt8] = bytes("OggS\u{0}....OpusHead")
    static let webm: [UInt8] = [0x1A, 0x45, 0xDF, 0xA3] + bytes("....webm")
    static let mkv: [UInt8] = [0x1A, 0x45, 0xDF, 0xA3] + bytes("....matroska")
    static let plainZip: [UInt8] = bytes("PK\u{03}\u{04}") + [UInt8](repeating: 0, count: 30)
    static let utf16: [UInt8] = [0xFF, 0xFE, 0x41, 0x00]

    static let signatures: [([UInt8], String)] = [
        (png, "public.png"), (jpeg, "public.jpeg"), (bytes("GIF89a\u{1}\u{0}"), "com.compuserve.gif"),
        (bytes("%PDF-1.7\n"), "com.adobe.pdf"), (bytes("fLaC\u{0}"), "org.xiph.flac"),
        (bytes("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 "), "org.webmproject.webp"),
        (bytes("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt "), "com.microsoft.waveform-audio"),
        (tiff, "public.tiff"), (ftyp("heic"), "public.heic"), (ftyp("avif"), "public.avif"),
        (ftyp("M4A "), "com.apple.m4a-audio"), (ftyp("qt  "), "com.apple.quicktime-movie"),
        (ftyp("isom"), "public.mpeg-4"), (ogg, "org.xiph.ogg-audio"), (webm, "org.webmproject.webm"),
        (mkv, "org.matroska.mkv"), (bytes("ID3\u{4}"), "public.mp3"),
        (zipWithMimetype("application/epub+zip"), "org.idpf.epub-container"),
        (zipWithMimetype("application/vnd.oasis.opendocument.text"), "org.oasis-open.opendocument.text"),
        (docx, "org.openxmlformats.wordprocessingml.document"),
        (plainZip, "public.zip-archive"),
        ([0x1F, 0x8B, 8, 0], "org.gnu.gnu-zip-archive"), ([0x7F, 0x45, 0x4C, 0x46, 2], "public.elf-binary"),
        (bytes("<!DOCTYPE html><html>"), "public.html"), (bytes("  <?xml version=\"1.0\"?><svg>"), "public.svg-image"),
        (bytes("<?xml version=\"1.0\"?><feed>"), "public.xml"), (bytes("plain words\n"), "public.plain-text"),
        (utf16, "public.plain-text"),
    ]

    @Test(arguments: signatures)
    func signaturesNameTheirFormat(head: [UInt8], expected: String) {
        #expect(ContentSniffer.sniff(head)?.identifier == expected)
    }

    @Test func binaryWithoutASignatureIsNotText() {
        #expect(ContentSniffer.sniff([0x00, 0x01, 0x02, 0xFE, 0x80]) == nil)
        #expect(ContentSniffer.sniff([]) == nil)
        // Invalid UTF-8 (a lone continuation byte) is not text.
        #expect(ContentSniffer.sniff(Self.bytes("abc") + [0x80, 0x41]) == nil)
        // A multi-byte character cut by the end of the head still is.
        #expect(ContentSniffer.sniff(Self.bytes("caf") + [0xC3])?.identifier == "public.plain-text")
    }

    /// Strong signatures win over any extension that does not conform to
    /// them; weak ones only over an unknown extension or another family.
    static let refinements: [(String, [UInt8], String)] = [
        ("scan.dat", png, "public.png"),
        ("scan", png, "public.png"),
        ("photo.txt", png, "public.png"),
        ("photo.jpg", png, "public.png"),
        ("photo.png", png, "public.png"),
        ("IMG_1.CR2", tiff, "com.canon.cr2-raw-image"),
        ("notes.txt", tiff, "public.tiff"),
        ("report.docx", docx, "org.openxmlformats.wordprocessingml.document"),
        ("bundle.zip", docx, "public.zip-archive"),
        ("Keynote.key", plainZip, "com.apple.iwork.keynote.sffkey"),
        ("clip.mov", ftyp("isom"), "com.apple.quicktime-movie"),
        ("song.m4a", ftyp("isom"), "com.apple.m4a-audio"),
        ("README", bytes("# Title\n"), "public.plain-text"),
        ("page.txt", bytes("<html><body>"), "public.plain-text"),
        ("data.bin", [0x00, 0x01], "public.data"),
    ]

    @Test(arguments: refinements)
    func refinedTypeKeepsHonestExtensions(name: String, head: [UInt8], expected: String) {
        #expect(ContentSniffer.refinedType(name: Array(name.utf8), head: head) == expected)
    }
}
