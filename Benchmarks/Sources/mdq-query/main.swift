import Foundation
import MetadataIndex
import SystemPackage

/// `mdq-query [ENTRIES]`: predicate evaluation over an in-memory index of
/// synthetic names (no disk), like make-tree.py's mix: words in several
/// scripts, NFD variants, IMG_ names, extensions by frequency. Prints the
/// median of 9 runs per predicate, single-threaded, and the parse time.
struct Generator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
let words = ["report", "invoice", "photo", "notes", "draft", "final", "budget", "plan", "meeting", "summary",
             "readme", "index", "main", "test", "data", "config", "backup", "image", "scan", "letter",
             "r\u{E9}sum\u{E9}", "\u{DC}bersicht", "\u{62A5}\u{544A}", "\u{5199}\u{771F}", "na\u{EF}ve", "caf\u{E9}",
             "project", "archive", "todo", "log", "chapter", "slide"]
let extensions: [(String, Int)] = [("txt", 12), ("md", 6), ("png", 10), ("jpg", 10), ("pdf", 6), ("json", 6), ("swift", 5),
    ("c", 4), ("h", 4), ("py", 4), ("html", 3), ("css", 2), ("js", 4), ("docx", 2), ("xlsx", 2), ("key", 1),
    ("numbers", 1), ("pages", 1), ("mp3", 2), ("mov", 1), ("zip", 1), ("tar.gz", 1), ("", 3)]
let totalWeight = extensions.map(\.1).reduce(0, +)
var random = Generator(state: 42)
func pickExtension(_ random: inout Generator) -> String {
    var x = Int.random(in: 0..<totalWeight, using: &random)
    for (ext, weight) in extensions {
        x -= weight
        if x < 0 { return ext }
    }
    return "txt"
}

let index = FileIndex()
let root = index.addRoot(path: "/bench", metadata: EntryMetadata(kind: .folder, size: 0, modificationTime: Timestamp(nanosecondsSinceEpoch: 0)))
var folders = [root]
let base: Int64 = 1_700_000_000_000_000_000
for i in 0..<count {
    if i % 25 == 0 {
        let parent = folders[Int.random(in: max(0, folders.count - 200)..<folders.count, using: &random)]
        let name = "\(words.randomElement(using: &random)!)\(folders.count)"
        folders.append(index.insert(name: Array(name.utf8), in: parent, metadata: EntryMetadata(kind: .folder, size: 0, modificationTime: Timestamp(nanosecondsSinceEpoch: base))))
        continue
    }
    var word = words.randomElement(using: &random)!
    if Int.random(in: 0..<10, using: &random) < 3 { word = word.decomposedStringWithCanonicalMapping }
    let style = Int.random(in: 0..<100, using: &random)
    let stem: String
    switch style {
    case 0..<35: stem = "\(word)_\(i)"
    case 35..<55: stem = "\(word.capitalized) \(words.randomElement(using: &random)!) \(i % 97)"
    case 55..<70: stem = String(format: "IMG_%05d", i % 100_000)
    default: stem = "\(word)\(i)"
    }
    let ext = pickExtension(&random)
    let name = ext.isEmpty ? stem : "\(stem).\(ext)"
    let parent = folders[Int.random(in: max(0, folders.count - 200)..<folders.count, using: &random)]
    let size = [0, 0, 0, 17, 512, 4096, 2_000_000][Int.random(in: 0..<7, using: &random)]
    let mtime = base - Int64.random(in: 0..<(400 * 86_400), using: &random) * 1_000_000_000
    index.insert(name: Array(name.utf8), in: parent, metadata: EntryMetadata(kind: .file, size: UInt64(size), modificationTime: Timestamp(nanosecondsSinceEpoch: mtime), inode: UInt64(i)))
}
print("index of \(index.count) entries (\(folders.count) folders)")

func milliseconds(_ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    body()
    let d = clock.now - start
    return (Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) * 1000
}

let weekAgo = Date(timeIntervalSince1970: Double(base) / 1e9 - 7 * 86_400)
let queries: [(String, MetadataPredicate)] = [
    ("LIKE '*.png'", try MetadataPredicate("kMDItemFSName LIKE '*.png'")),
    ("LIKE[cd] '*report*'", try MetadataPredicate("kMDItemFSName LIKE[cd] '*report*'")),
    ("LIKE 'IMG_0??1*'", try MetadataPredicate("kMDItemFSName LIKE 'IMG_0??1*'")),
    ("IN {'a.txt','b.txt'}", try MetadataPredicate("kMDItemFSName IN {'a.txt', 'b.txt'}")),
    ("MATCHES '.*[0-9]{4}\\.jpg'", try MetadataPredicate("kMDItemFSName MATCHES '.*[0-9]{4}\\\\.jpg'")),
    ("size > 1 MB AND date >= week ago AND name ENDSWITH[c] '.pdf'",
     try MetadataPredicate(format: "kMDItemFSSize > 1000000 AND kMDItemFSContentChangeDate >= %@ AND kMDItemFSName ENDSWITH[c] '.pdf'", weekAgo)),
    ("BEGINSWITH[c] 'report'", try MetadataPredicate("kMDItemFSName BEGINSWITH[c] 'report'")),
    ("LIKE[c] '*.jpg' OR '*.png' OR '*.pdf' OR '*.docx' (OR chain)",
     try MetadataPredicate("kMDItemFSName LIKE[c] '*.jpg' OR kMDItemFSName LIKE[c] '*.png' OR kMDItemFSName LIKE[c] '*.pdf' OR kMDItemFSName ENDSWITH[c] '.docx'")),
]
// MDQ_QUERY_ONLY=TEXT runs only the predicates whose label contains TEXT;
// MDQ_QUERY_RUNS=N times each N times (for profiling).
let only = ProcessInfo.processInfo.environment["MDQ_QUERY_ONLY"]
let runs = max(1, Int(ProcessInfo.processInfo.environment["MDQ_QUERY_RUNS"] ?? "") ?? 9)
for (label, predicate) in queries where only.map(label.contains) ?? true {
    var times: [Double] = []
    var matches = 0
    for _ in 0..<runs { times.append(milliseconds { matches = index.count(matching: predicate) }) }
    times.sort()
    let padded = label.padding(toLength: 62, withPad: " ", startingAt: 0)
    print(padded + String(format: " %8.2f ms (median of %d; min %.2f)  %d matches", times[runs / 2], runs, times[0], matches))
}
let text = "kMDItemFSSize > 1000000 AND kMDItemFSName LIKE[cd] '*report*.pdf' OR kMDItemDisplayName BEGINSWITH 'IMG_'"
let parses = 20_000
let parseTime = milliseconds { for _ in 0..<parses { _ = try? MetadataPredicate(text) } }
print(String(format: "parse a typical query: %.2f µs", parseTime * 1000 / Double(parses)))
