import Foundation
import Glibc
import TestSupport
import Testing

/// What users of fd, locate and mdfind bring: fd's --size and
/// --changed-within/--changed-before, sizes with units in predicates,
/// and the keys mdfind users type most (kMDItemContentModificationDate,
/// kMDItemKind).
///
/// The time limit guards against a hang, as every suite's does: three
/// minutes as theirs, since a test's time counts from its start, and on
/// two cores its body may wait for a thread the whole run shares (these
/// three passed after 123 s in a full run, and were stopped at 60 s in a
/// clean clone's).
@Suite(.timeLimit(.minutes(3)))
struct HabitsTests {
    /// A small tree: sizes 0, 900, 1,500, 2,000,000 bytes; one file two days old.
    static func tree(_ temp: TemporaryDirectory) throws -> String {
        try temp.file("tree/empty.txt", contents: "")
        try temp.file("tree/small.md", contents: String(repeating: "s", count: 900))
        try temp.file("tree/mid.pdf", contents: String(repeating: "m", count: 1_500))
        try temp.file("tree/big.png", contents: String(repeating: "b", count: 2_000_000))
        try temp.file("tree/sub/old.txt", contents: "old")
        let old = temp.path.appending("tree/sub/old.txt").string
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -2 * 86_400 - 60)], ofItemAtPath: old)
        return temp.path.appending("tree").string
    }

    func names(_ arguments: [String], in tree: String) throws -> [String] {
        let output = try Shell.run(MDQCommandTests.binary, ["--no-daemon", "--onlyin", tree] + arguments)
        #expect(output.status == 0, "\(arguments): \(output.stderrText)")
        return output.stdoutText.split(separator: "\n").map { String($0.split(separator: "/").last!) }.sorted()
    }

    @Test func fdFilters() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        #expect(try names(["--size", "+1k"], in: tree) == ["big.png", "mid.pdf"])
        #expect(try names(["--size", "-1k", "--size", "+1"], in: tree) == ["old.txt", "small.md"])
        #expect(try names(["--size", "+1ki", "--size", "-1.5kb"], in: tree) == ["mid.pdf"])
        #expect(try names(["--size", "1500b"], in: tree) == ["mid.pdf"])
        #expect(try names(["--size", "+2MB", "*.png"], in: tree) == ["big.png"])
        #expect(try names(["--changed-before", "1d"], in: tree) == ["old.txt"])
        #expect(try names(["--changed-within", "1day", "--type", "f"], in: tree).count == 4)
        #expect(try names(["--changed-within", "1970-01-02", "*.txt"], in: tree) == ["empty.txt", "old.txt"])
        for (option, value) in [("--size", "+1Q"), ("--size", "big"), ("--changed-within", "soon")] {
            let bad = try Shell.run(MDQCommandTests.binary, ["--no-daemon", "--onlyin", tree, option, value])
            #expect(bad.status == 2 && bad.stderrText.contains(option), "\(bad.stderrText)")
        }
    }

    /// A pattern with a `/` searches the whole path, as locate does.
    @Test func aSlashMakesAPathSearch() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        try temp.file("tree/Reports/2021/q1.txt")
        try temp.file("tree/Reports/2022/q1.txt")
        #expect(try names(["reports/2021"], in: tree) == ["2021", "q1.txt"])
        #expect(try names(["*/REPORTS/*/q?.txt"], in: tree) == ["q1.txt", "q1.txt"])
        #expect(try names(["sub/old"], in: tree) == ["old.txt"])
        #expect(try names(["Reports"], in: tree) == ["Reports"])
    }

    @Test func predicatesTakeSizeUnitsAndMdfindKeys() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        #expect(try names(["kMDItemFSSize > 1MB"], in: tree) == ["big.png"])
        #expect(try names(["kMDItemFSSize >= 1.5kB && kMDItemFSSize < 1.9MiB"], in: tree) == ["mid.pdf"])
        #expect(try names(["--spotlight", "kMDItemFSSize > 1mib"], in: tree) == ["big.png"])
        #expect(
            try names(["kMDItemKind == 'PDF document' || kMDItemKind == 'Folder'"], in: tree) == ["mid.pdf", "sub"])
        #expect(try names(["kMDItemKind LIKE[c] '*image'"], in: tree) == ["big.png"])
        #expect(try names(["kMDItemContentModificationDate < $time.today(-1)"], in: tree) == ["old.txt"])
        let columns = try Shell.run(
            MDQCommandTests.binary, ["--no-daemon", "--attr", "kMDItemKind", "*.md", tree])
        #expect(columns.stdoutText == "\(tree)/small.md\tMarkdown Document\n")
        let keys = try Shell.run(MDQCommandTests.binary, ["--list-attributes"]).stdoutText
        #expect(keys.contains("kMDItemKind") && keys.contains("kMDItemContentModificationDate"))
    }

    /// `kMDItemLastUsedDate` is the access time, read when asked: a read
    /// under `relatime` moves it (when the filesystem records reads), and
    /// mdq's own importing does not (it opens files with O_NOATIME).
    @Test func lastUsedDateIsTheAccessTime() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let file = "\(tree)/small.md"
        var times = [
            timespec(tv_sec: time(nil) - 10 * 86_400, tv_nsec: 0),
            timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2 /* UTIME_OMIT */),
        ]
        #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        #expect(try names(["kMDItemLastUsedDate < $time.today(-7)"], in: tree) == ["small.md"])
        let listed = try Shell.run(MDQCommandTests.binary, ["ls", "--raw", "--name", "kMDItemLastUsedDate", file])
        let stamp = Date(timeIntervalSince1970: TimeInterval(times[0].tv_sec))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        #expect(listed.stdoutText == formatter.string(from: stamp), "\(listed.stderrText)")
        // Importing reads the file without touching its access time.
        let imported = try Shell.run(MDQCommandTests.binary, ["import", file])
        #expect(imported.status == 0, "\(imported.stderrText)")
        #expect(try names(["kMDItemLastUsedDate < $time.today(-7)"], in: tree) == ["small.md"])
        // A read by someone else moves it, and the next query sees that.
        _ = try String(contentsOfFile: file, encoding: .utf8)
        var status = stat()
        #expect(stat(file, &status) == 0)
        if status.st_atim.tv_sec != times[0].tv_sec {
            #expect(try names(["kMDItemLastUsedDate < $time.today(-7)"], in: tree) == [])
            #expect(try names(["kMDItemLastUsedDate >= $time.today"], in: tree).contains("small.md"))
        }
    }

    /// Free text of several words is a name containing it as one piece;
    /// when none does, a note says how many names hold each word (mdfind's
    /// reading) and the predicate that finds them, which works as given.
    @Test func severalWordsThatMatchNothingSayHowMdfindReadsThem() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        try temp.file("tree/tom and jerry.mp4")
        try temp.file("tree/jerry's tom.txt")
        let missed = try Shell.run(MDQCommandTests.binary, ["--no-daemon", "--onlyin", tree, "jerry tom"])
        #expect(missed.status == 0 && missed.stdoutText.isEmpty)
        let note = missed.stderrText
        #expect(
            note.hasPrefix("mdq: note: no name contains \"jerry tom\" as one piece; 2 names contain each"), "\(note)")
        let suggested = try #require(note.components(separatedBy: "mdq \"").last?.dropLast(2))
        #expect(try names([String(suggested)], in: tree) == ["jerry's tom.txt", "tom and jerry.mp4"])
        // Counted, the note follows the count; found as one piece, or
        // one word, or a glob: no note.
        let counted = try Shell.run(MDQCommandTests.binary, ["--no-daemon", "--count", "--onlyin", tree, "jerry tom"])
        #expect(counted.stdoutText == "0\n" && counted.stderrText.contains("2 names contain"))
        for query in ["tom and", "zzqq", "zz*qq", "zz qq", "kMDItemFSName == 'jerry tom'"] {
            let quiet = try Shell.run(MDQCommandTests.binary, ["--no-daemon", "--onlyin", tree, query])
            #expect(quiet.stderrText.isEmpty, "\(query): \(quiet.stderrText)")
        }
        let silenced = try Shell.run(
            MDQCommandTests.binary, ["--no-daemon", "--no-warnings", "--onlyin", tree, "jerry tom"])
        #expect(silenced.stderrText.isEmpty)
    }
}
