import MDQSystem

/// `kMDItemKind`: a content type as a person reads it ("PDF document",
/// "Folder", "PNG image"), in the English wording Finder shows.
///
/// The common types have their own wording; any other type is named by
/// the nearest type it conforms to that has one ("image", "movie",
/// "source code", ...), and a file of no known type is a "Document".
enum ContentKind {
    /// Each content type's kind, by the type's number in `ContentType.types`.
    static let byType: [[UInt8]] = ContentType.types.map {
        Array(description(ofType: $0.identifier, tree: $0.tree).utf8)
    }

    /// The kind of an entry with this type identifier and type tree.
    package static func description(ofType identifier: String, tree: [String]) -> String {
        if let own = names[identifier] { return own }
        for type in tree.dropFirst() {
            if let general = general[type] { return general }
        }
        return "Document"
    }

    private static let names: [String: String] = [
        "public.folder": "Folder", "public.symlink": "Alias", "com.apple.application-bundle": "Application",
        "com.apple.framework": "Framework", "com.apple.plugin": "Plug-in", "com.apple.package": "Package",
        "public.plain-text": "Plain Text Document", "net.daringfireball.markdown": "Markdown Document",
        "public.rtf": "Rich Text Format document", "public.html": "HTML text", "public.xhtml": "XHTML text",
        "public.xml": "XML text", "public.json": "JSON document", "public.yaml": "YAML document",
        "public.comma-separated-values-text": "comma-separated values",
        "public.tab-separated-values-text": "tab-separated values", "com.apple.log": "Log File",
        "com.adobe.pdf": "PDF document", "com.adobe.postscript": "PostScript document",
        "public.png": "PNG image", "public.jpeg": "JPEG image", "com.compuserve.gif": "GIF image",
        "public.tiff": "TIFF image", "com.microsoft.bmp": "Windows BMP image", "public.heic": "HEIC image",
        "public.heif": "HEIF image", "public.avif": "AVIF image", "org.webmproject.webp": "WebP image",
        "public.svg-image": "SVG document", "com.adobe.photoshop-image": "Adobe Photoshop file",
        "com.adobe.raw-image": "Adobe raw image", "public.jpeg-xl": "JPEG XL image",
        "public.mp3": "MP3 audio", "public.mpeg-4-audio": "MPEG-4 audio", "com.apple.m4a-audio": "Apple MPEG-4 audio",
        "org.xiph.flac": "FLAC audio", "org.xiph.ogg-audio": "Ogg audio", "public.aiff-audio": "AIFF audio",
        "com.microsoft.waveform-audio": "Waveform audio", "public.aac-audio": "AAC audio",
        "public.mpeg-4": "MPEG-4 movie", "com.apple.quicktime-movie": "QuickTime movie",
        "org.matroska.mkv": "Matroska video", "org.webmproject.webm": "WebM video", "public.avi": "AVI movie",
        "public.mpeg": "MPEG movie",
        "org.openxmlformats.wordprocessingml.document": "Microsoft Word document",
        "com.microsoft.word.doc": "Microsoft Word 97-2004 document",
        "org.openxmlformats.spreadsheetml.sheet": "Microsoft Excel workbook",
        "com.microsoft.excel.xls": "Microsoft Excel 97-2004 workbook",
        "org.openxmlformats.presentationml.presentation": "Microsoft PowerPoint presentation",
        "com.microsoft.powerpoint.ppt": "Microsoft PowerPoint 97-2004 presentation",
        "org.oasis-open.opendocument.text": "OpenDocument text",
        "org.oasis-open.opendocument.spreadsheet": "OpenDocument spreadsheet",
        "org.oasis-open.opendocument.presentation": "OpenDocument presentation",
        "com.apple.iwork.pages.sffpages": "Pages document", "com.apple.iwork.numbers.sffnumbers": "Numbers spreadsheet",
        "com.apple.iwork.keynote.sffkey": "Keynote presentation", "org.idpf.epub-container": "EPUB book",
        "public.zip-archive": "ZIP archive", "org.gnu.gnu-zip-archive": "gzip compressed archive",
        "org.gnu.gnu-zip-tar-archive": "gzip compressed tar archive", "public.tar-archive": "tar archive",
        "org.7-zip.7-zip-archive": "7-Zip archive", "public.bzip2-archive": "bzip2 compressed archive",
        "org.tukaani.xz-archive": "XZ compressed archive", "org.zstandard.zstd-archive": "Zstandard archive",
        "com.apple.disk-image-udif": "Disk Image", "public.iso-image": "ISO disk image",
        "public.swift-source": "Swift source", "public.c-source": "C source", "public.c-header": "C header",
        "public.c-plus-plus-source": "C++ source", "public.objective-c-source": "Objective-C source",
        "public.python-script": "Python script", "com.netscape.javascript-source": "JavaScript script",
        "com.microsoft.typescript": "TypeScript source", "public.shell-script": "shell script",
        "public.bash-script": "Bash script", "public.css": "CSS style sheet", "com.sun.java-source": "Java source",
        "org.golang.go-source": "Go source", "org.rust-lang.rust-source": "Rust source",
        "public.ruby-script": "Ruby script", "public.perl-script": "Perl script", "public.php-script": "PHP script",
        "com.apple.property-list": "property list", "com.apple.bookmark": "Bookmark",
        "public.elf-binary": "ELF executable", "public.unix-executable": "Unix executable",
    ]

    /// Wordings for the general types, nearest first in a type's tree.
    private static let general: [String: String] = [
        "public.image": "image", "public.movie": "movie", "public.audio": "audio",
        "public.audiovisual-content": "media", "public.source-code": "source code", "public.script": "script",
        "public.archive": "archive", "public.font": "font", "public.presentation": "presentation",
        "public.spreadsheet": "spreadsheet", "public.text": "text document", "public.executable": "executable",
        "public.disk-image": "disk image", "com.apple.package": "Package", "public.folder": "Folder",
    ]
}
