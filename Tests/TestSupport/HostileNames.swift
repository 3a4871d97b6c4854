/// File names that are legal on Linux and hard on tools, as bytes: for tests
/// that create them and check they are crawled, watched, matched and printed
/// byte for byte.
package enum HostileNames {
    package static let all: [[UInt8]] = [
        [0x62, 0x61, 0x64, 0xFF, 0xFE, 0x2E, 0x74, 0x78, 0x74],  // "bad\xFF\xFE.txt": not UTF-8
        [0xC3, 0x28, 0x2E, 0x74, 0x78, 0x74],  // a truncated two-byte sequence
        Array("new\nline.txt".utf8),
        Array("tab\there.txt".utf8),
        Array("quote\"s and 'single'.txt".utf8),
        Array("back\\slash\\.txt".utf8),
        Array("-leading-dash.txt".utf8),
        Array("--help.txt".utf8),
        Array(" spaces  .txt".utf8),
        Array("*?[wild]{card}.txt".utf8),
        Array("$(touch pwned).txt".utf8),
        Array("caf\u{E9}.txt".utf8),  // NFC
        Array("cafe\u{301}.txt".utf8),  // NFD, same text: a different name on disk
        Array(String(repeating: "n", count: 251).utf8) + Array(".txt".utf8),  // 255 bytes
        Array("\u{202E}gnp.txt".utf8),  // right-to-left override
        Array("emoji \u{1F600}.txt".utf8),
    ]
}
