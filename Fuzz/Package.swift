// swift-tools-version: 6.1
import PackageDescription

// libFuzzer targets, kept out of the main package: built only with
// `-sanitize=fuzzer` (libFuzzer supplies `main`). Run with `Scripts/fuzz`.
let package = Package(
    name: "mdq-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "mdq", path: "..")],
    targets: [
        .executableTarget(
            name: "fuzz-predicate",
            dependencies: [.product(name: "MetadataIndex", package: "mdq")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
