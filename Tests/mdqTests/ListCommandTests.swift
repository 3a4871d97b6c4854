import Foundation
import Glibc
import TestSupport
import Testing

/// `mdq ls`: mdls's output in every mode, run as a process.
struct ListCommandTests {
    func mdq(_ arguments: [String], environment: [String: String]? = nil) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, arguments, environment: environment)
    }

    func fixture() throws -> TemporaryDirectory {
        let temp = try TemporaryDirectory()
        try temp.file("Documents/photo.png", contents: "12345")
        try temp.file("Documents/report.txt")
        try temp.file("Documents/report.sync-conflict-20250131-101112-ABCDEFG.txt")
        return temp
    }

    @Test func printsAlignedSortedAttributes() throws {
        let temp = try fixture()
        let output = try mdq(["ls", temp.path.appending("Documents/photo.png").string])
        #expect(output.status == 0)
        let lines = output.stdoutText.split(separator: "\n").map(String.init)
        let keyLines = lines.filter { $0.contains(" = ") }
        let keys = keyLines.map { String($0.prefix { $0 != " " }) }
        #expect(keys == keys.sorted(), "sorted by key")
        #expect(Set(keyLines.map { $0.range(of: " = ")!.lowerBound.utf16Offset(in: $0) }).count == 1, "aligned")
        #expect(keyLines.contains { $0.hasPrefix("kMDItemFSName ") && $0.hasSuffix("= \"photo.png\"") })
        #expect(keyLines.contains { $0.hasPrefix("kMDItemFSSize ") && $0.hasSuffix("= 5") })
        #expect(keyLines.contains { $0.hasPrefix("kMDItemContentType ") && $0.hasSuffix("= \"public.png\"") })
        #expect(lines.contains("    \"public.image\","))
        // Dates in local time, mdls style.
        let date = try #require(keyLines.first { $0.hasPrefix("kMDItemFSContentChangeDate") })
        #expect(date.range(of: #"= \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}$"#, options: .regularExpression) != nil)
    }

    @Test func namedAttributesAndNull() throws {
        let temp = try fixture()
        let folder = temp.path.appending("Documents").string
        let output = try mdq(["ls", "--name", "kMDItemFSSize", "--name", "NSMetadataItemContentTypeKey", folder])
        #expect(output.status == 0)
        #expect(output.stdoutText == "kMDItemFSSize      = (null)\nkMDItemContentType = \"public.folder\"\n")
    }

    @Test func rawModeSeparatesValuesWithNUL() throws {
        let temp = try fixture()
        let report = temp.path.appending("Documents/report.txt").string
        let output = try mdq([
            "ls", "--raw", "--null-marker", "-", "--name", "kMDItemFSName", "--name", "kMDItemFSCreationDate",
            "--name", "NSMetadataUbiquitousItemHasUnresolvedConflictsKey", "--name", "NSMetadataItemIsUbiquitousKey",
            report,
        ])
        #expect(output.status == 0)
        let values = output.stdoutText.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
        #expect(values.count == 4, "separated, not ended, by NUL: \(values)")
        #expect(values[0] == "report.txt", "strings unquoted, as mdls -raw prints them")
        #expect(values[2] == "1", "a conflict copy sits beside it")
        #expect(values[3] == "0")
    }

    @Test func jsonModeAndContainerKeys() throws {
        let temp = try fixture()
        let photo = temp.path.appending("Documents/photo.png").string
        let output = try mdq(["ls", "--json", "--container", temp.path.string, photo])
        #expect(output.status == 0)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdoutText.utf8)) as? [String: Any])
        #expect(object["path"] as? String == photo)
        let attributes = try #require(object["attributes"] as? [String: Any])
        #expect(attributes["kMDItemFSSize"] as? Int == 5)
        #expect(attributes["NSMetadataItemIsUbiquitousKey"] as? Bool == true)
        #expect(
            attributes["NSMetadataUbiquitousItemDownloadingStatusKey"] as? String
                == "NSMetadataUbiquitousItemDownloadingStatusCurrent")
        #expect((attributes["kMDItemContentTypeTree"] as? [String])?.contains("public.image") == true)
    }

    @Test func missingPathsAreReportedAndTheRestPrinted() throws {
        let temp = try fixture()
        let missing = temp.path.appending("nope").string
        let output = try mdq([
            "ls", "--name", "kMDItemFSName", missing, temp.path.appending("Documents/photo.png").string,
        ])
        #expect(output.status == 1)
        #expect(output.stderrText == "mdq: no such file or folder: \(missing)\n")
        #expect(output.stdoutText.contains("\"photo.png\""))
        let usage = try mdq(["ls", "--name", "kMDItemNope", missing])
        #expect(usage.status == 2)
        #expect(usage.stderrText.contains("unknown attribute 'kMDItemNope'"))
    }
}
