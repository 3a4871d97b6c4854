// swift-tools-version: 6.1
import PackageDescription

// Measuring instruments, kept out of the main package so its users never
// build them. `mdq-gather` times a full gather into the index and reports
// resident memory per entry; `compare-foundation.sh` puts it beside find/fd.
let package = Package(
    name: "mdq-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
    ],
    targets: [
        .executableTarget(
            name: "mdq-query",
            dependencies: [
                .product(name: "MetadataIndex", package: "main"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "mdq-gather",
            dependencies: [
                .product(name: "MetadataIndex", package: "main"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "mdq-live",
            dependencies: [
                .product(name: "MetadataIndex", package: "main"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
