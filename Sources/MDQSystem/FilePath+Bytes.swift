public import SystemPackage

extension FilePath {
    /// A path from raw bytes, which need not be UTF-8 (a name on disk, a
    /// command-line argument).
    public static func fromBytes(_ bytes: [UInt8]) -> FilePath {
        bytes.withUnsafeBufferPointer { buffer in
            var terminated = Array(buffer.lazy.map { CChar(bitPattern: $0) })
            terminated.append(0)
            return terminated.withUnsafeBufferPointer { FilePath(platformString: $0.baseAddress!) }
        }
    }

    /// A path of another host as searches across hosts name it,
    /// `NAME:/path` (`host`, and the path's bytes on it).
    package static func onHost(_ host: String, _ path: [UInt8]) -> FilePath {
        fromBytes(Array(host.utf8) + [UInt8(ascii: ":")] + path)
    }

    /// Appends the path's raw bytes.
    package func appendBytes(to bytes: inout [UInt8]) {
        withPlatformString { cString in
            var end = cString
            while end.pointee != 0 { end += 1 }
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: cString, count: end - cString))
        }
    }

    /// The path's raw bytes.
    package var bytes: [UInt8] {
        var result: [UInt8] = []
        appendBytes(to: &result)
        return result
    }
}
