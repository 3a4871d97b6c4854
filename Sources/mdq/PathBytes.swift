import SystemPackage

/// Paths as bytes and back through `FilePath`, so the front normalizes and
/// joins paths with the code the full command and the library use.
enum PathBytes {
    /// The path of `bytes` (any bytes but NUL).
    static func path(_ bytes: [UInt8]) -> FilePath {
        (bytes.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
            FilePath(platformString: $0.baseAddress!)
        }
    }
}

extension FilePath {
    /// The path's bytes.
    var bytes: [UInt8] {
        withPlatformString { cString in
            var end = cString
            while end.pointee != 0 { end += 1 }
            return Array(UnsafeRawBufferPointer(start: cString, count: end - cString))
        }
    }
}
