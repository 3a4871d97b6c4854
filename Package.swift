// swift-tools-version: 6.1
import PackageDescription

/// One settings array for every Swift target, so the language mode and the
/// debug-only invariant checks are the same everywhere.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // `_checkInvariants()` runs after every mutating index operation in debug
    // builds (which is what `swift test` builds); release builds skip it.
    .define("MDQ_INVARIANTS", .when(configuration: .debug)),
]

let package = Package(
    name: "mdq",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MetadataIndex", targets: ["MetadataIndex"]),
        // Apple's names (NSMetadataQuery, NSMetadataItem, the key and scope
        // constants, NSPredicate(format:)), over MetadataIndex, for code
        // written for Apple platforms.
        .library(name: "MetadataCompat", targets: ["MetadataCompat"]),
        .executable(name: "mdq", targets: ["mdq"]),
        .executable(name: "mdq-full", targets: ["mdq-full"]),
        // The confined process the daemon and `mdq import` read file
        // contents in; it alone links the format libraries.
        .executable(name: "mdq-import-worker", targets: ["mdq-import-worker"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // The DocC documentation (Scripts/docs: MetadataIndex and the modules it re-exports).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libinotifytools (GPL-2). Debian ships no .pc file, so no pkgConfig:.
        .systemLibrary(name: "CInotifyTools", path: "Sources/CInotifyTools"),
        // SQLite 3 with FTS5 (public domain; Debian's libsqlite3-dev), the
        // import store's engine. Debian ships a .pc file, but the module map
        // names the library as for libinotifytools.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // libpq (PostgreSQL licence; Debian's libpq-dev), PostgreSQL's own
        // client library, for the shared index across hosts.
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", providers: [.apt(["libpq-dev"])]),
        // ICU's regular expressions (Unicode licence; Debian's libicu-dev),
        // for MATCHES: NSPredicate's engine, called directly (Foundation's
        // NSRegularExpression leaks every long pattern it compiles), behind
        // plain C types (ICU's headers would clash with Foundation's copy).
        .target(
            name: "CICURegex", path: "Sources/CICURegex",
            linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc")]),
        // Poppler's GLib interface (GPL-2.0-or-later), for PDF text and
        // properties; Debian's libpoppler-glib-dev ships its .pc file.
        .systemLibrary(
            name: "CPoppler", path: "Sources/CPoppler", pkgConfig: "poppler-glib",
            providers: [.apt(["libpoppler-glib-dev"])]),
        // libzip (BSD-3-Clause), for OOXML, OpenDocument and EPUB containers.
        .systemLibrary(
            name: "CZip", path: "Sources/CZip", pkgConfig: "libzip", providers: [.apt(["libzip-dev"])]),
        // gexiv2 (GPL-2.0-or-later), Exiv2's C interface, for image
        // properties (EXIF, GPS, pixel size) of JPEG, PNG, GIF, WebP, TIFF,
        // HEIF/AVIF and camera raw files.
        .systemLibrary(
            name: "CGExiv2", path: "Sources/CGExiv2", pkgConfig: "gexiv2", providers: [.apt(["libgexiv2-dev"])]),
        // FFmpeg's libavformat (GPL-2.0-or-later as Debian builds it), for
        // audio and video duration, tags, codecs and rates.
        .systemLibrary(
            name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavformat", providers: [.apt(["libavformat-dev"])]),
        // statx(2) and getdents64(2) are not visible through Swift's Glibc
        // module; these two thin wrappers are the only C we compile.
        .target(name: "CLinuxSyscalls", path: "Sources/CLinuxSyscalls"),
        // The system layer: syscalls (every one through `syscallResult`),
        // files, sockets, processes, locks, the error type, and the values
        // every layer above speaks (timestamps, kinds, devices, folder
        // access, the daemon's paths). The only Swift code calling C.
        .target(
            name: "MDQSystem",
            dependencies: [
                "CLinuxSyscalls",
                "MDQWire",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The watcher seam and its backends: inotify (through
        // libinotifytools) and fanotify filesystem marks.
        .target(
            name: "MDQWatch",
            dependencies: [
                "MDQSystem",
                "CInotifyTools",
                "CLinuxSyscalls",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The core: the compact index, attributes, predicates and their
        // matchers, scopes, the crawler, and every scan that visits entries
        // one by one (so whole-module optimisation covers each hot loop).
        .target(
            name: "MDQCore",
            dependencies: [
                "MDQSystem",
                "MDQWire",
                "CLinuxSyscalls",
                "CICURegex",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // What is inside files: the importer seam, the built-in text and
        // extended-attribute importers, the confined worker pool and its
        // wire, and the SQLite store of what they found.
        .target(
            name: "MDQImport",
            dependencies: [
                "MDQSystem",
                "MDQCore",
                "CSQLite",
                "CZlib",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The delivery layer: what a subscription carries (entry snapshots,
        // messages, problems) and the result set that turns it into the
        // added/changed/removed updates a client replays.
        .target(
            name: "MDQLive",
            dependencies: [
                "MDQSystem",
                "MDQCore",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The live index: the engine keeping one index equal to the disk
        // through a watcher, its subscriptions and slices, content
        // indexing, snapshots, and the system index's configuration.
        .target(
            name: "MDQEngine",
            dependencies: [
                "MDQSystem",
                "MDQWatch",
                "MDQCore",
                "MDQImport",
                "MDQLive",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The index daemon and its client: the protocol's server
        // (`IndexDaemon`, a session per connection, a file per long
        // command), the client that speaks it, and the system index's feed.
        .target(
            name: "MDQDaemon",
            dependencies: [
                "MDQSystem",
                "MDQWatch",
                "MDQCore",
                "MDQImport",
                "MDQLive",
                "MDQEngine",
                "MDQWire",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "MetadataIndex",
            dependencies: [
                "MDQSystem",
                "MDQWatch",
                "MDQCore",
                "MDQImport",
                "MDQLive",
                "MDQEngine",
                "MDQDaemon",
                "MDQWire",
                "MDQShared",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // Importers over C format libraries. They run only in the import
        // worker (a confined process), so neither the library's embedders
        // nor the `mdq` command load those libraries.
        .target(
            name: "MetadataImporters",
            dependencies: [
                "MDQSystem", "MDQCore", "MDQImport", "CPoppler", "CZip", "CGExiv2", "CFFmpeg",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "mdq-import-worker",
            dependencies: ["MDQImport", "MetadataImporters"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "MetadataCompat",
            dependencies: ["MetadataIndex", .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: swiftSettings
        ),
        // `mdq`, the program users run: it answers the commonest searches
        // through the index daemon itself, with nothing but the Swift
        // runtime and libc (no Foundation, ICU or ArgumentParser to load),
        // and hands everything else to `mdq-full` beside it.
        .executableTarget(
            name: "mdq",
            dependencies: [
                "CLinuxSyscalls", "MDQVersion", "MDQWire", .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings),
        // The daemon protocol's JSON reader and writer, without Foundation:
        // shared by the library and the `mdq` front.
        .target(
            name: "MDQWire", dependencies: [.product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: swiftSettings),
        // The version both programs print.
        .target(name: "MDQVersion", swiftSettings: swiftSettings),
        // The shared index across hosts on PostgreSQL: its schema (owned and
        // migrated by mdq) and the connection to it.
        .target(
            name: "MDQShared", dependencies: ["CLibPQ", "MDQSystem", "MDQCore", "MDQEngine", "MDQWire"],
            swiftSettings: swiftSettings),
        // The full command line: every subcommand and option, the crawl, the
        // daemon itself.
        .executableTarget(
            name: "mdq-full",
            dependencies: [
                "MetadataIndex",
                "MDQLive",
                "MDQEngine",
                "MDQDaemon",
                "MDQWire",
                "MDQVersion",
                "MDQShared",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // The Swift snippets of the README and Documentation/, each a whole
        // file as the page shows it (ReadmeSnippetTests checks they are the
        // same), so every build compiles them.
        .executableTarget(
            name: "snippet-typed-predicates", dependencies: ["MetadataIndex"],
            path: "Examples/Snippets/TypedPredicates",
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "snippet-one-shot-and-index", dependencies: ["MetadataIndex"],
            path: "Examples/Snippets/OneShotAndIndex", swiftSettings: swiftSettings),
        .executableTarget(
            name: "snippet-live-query", dependencies: ["MetadataIndex"], path: "Examples/Snippets/LiveQuery",
            swiftSettings: swiftSettings),
        .executableTarget(
            name: "snippet-apple-compat", dependencies: ["MetadataCompat"], path: "Examples/Snippets/AppleCompat",
            swiftSettings: swiftSettings),
        // Temporary folders and process runs, shared by both test targets.
        .target(
            name: "TestSupport",
            dependencies: [.product(name: "SystemPackage", package: "swift-system")],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MetadataIndexTests",
            dependencies: [
                "MetadataIndex",
                "MDQSystem",
                "MDQWatch",
                "MDQCore",
                "MDQImport",
                "MDQLive",
                "MDQEngine",
                "MDQDaemon",
                "MDQWire",
                "MDQShared",
                "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MetadataCompatTests",
            dependencies: [
                "MetadataCompat",
                "MetadataIndex",
                "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "mdqTests",
            dependencies: [
                "mdq",
                "mdq-import-worker",
                "MetadataIndex",
                "MDQCore",
                "MDQImport",
                "MDQLive",
                "MDQEngine",
                "MDQDaemon",
                "MDQShared",
                "TestSupport",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
