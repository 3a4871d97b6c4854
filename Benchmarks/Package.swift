// swift-tools-version: 6.1
import PackageDescription

// Measuring instruments, kept out of the main package so its users never
// build them.
//
// - `MDQBenchmarks` (package-benchmark; `swift package benchmark`): gather,
//   query, apply, live latency and memory suites.
// - `mdq-gather`, `mdq-query`, `mdq-live`: the same figures as plain
//   executables for the comparison scripts (`compare.sh`,
//   `compare-foundation.sh`), which put them beside find, fd, plocate and
//   watchman.
let package = Package(
    name: "mdq-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so the identity does not depend on what the clone is called.
        .package(name: "mdq", path: ".."),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.0", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "BenchSupport",
            dependencies: [
                .product(name: "MetadataIndex", package: "mdq"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "MDQBenchmarks",
            dependencies: [
                "BenchSupport",
                .product(name: "MetadataIndex", package: "mdq"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/MDQBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "mdq-query",
            dependencies: [
                "BenchSupport",
                .product(name: "MetadataIndex", package: "mdq"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "mdq-gather",
            dependencies: [
                "BenchSupport",
                .product(name: "MetadataIndex", package: "mdq"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "mdq-live",
            dependencies: [
                "BenchSupport",
                .product(name: "MetadataIndex", package: "mdq"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
