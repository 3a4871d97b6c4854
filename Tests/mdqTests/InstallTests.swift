import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// `Scripts/install` and `Scripts/uninstall`, into a temporary prefix, with
/// the programs this test run built (the release build the script makes
/// otherwise is too slow for a test): the layout, programs that work from
/// another folder, completions that load, and a clean uninstall.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct InstallTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func installsRunsFromAnywhereAndUninstalls() throws {
        let temp = try TemporaryDirectory()
        let prefix = temp.path.appending("prefix").string
        let built = URL(fileURLWithPath: MDQCommandTests.binary).deletingLastPathComponent().path
        let install = try Shell.run(
            "/bin/bash", ["\(Self.repository.path)/Scripts/install", prefix], environment: ["MDQ_INSTALL_FROM": built])
        try #require(install.status == 0, "\(install.stderrText)")
        let expected = [
            "bin/mdq", "bin/mdfind", "bin/mdls", "libexec/mdq/mdq-full", "libexec/mdq/mdq-import-worker",
            "share/man/man1/mdq.1",
            "share/man/man1/mdfind.1", "share/man/man1/mdls.1",
            "share/bash-completion/completions/mdq", "share/zsh/site-functions/_mdq",
            "share/fish/vendor_completions.d/mdq.fish", "lib/systemd/user/mdq.service", "lib/systemd/user/mdq.socket",
            "share/mdq/installed-files",
        ]
        for file in expected {
            #expect(FileManager.default.fileExists(atPath: "\(prefix)/\(file)"), "\(file) missing")
        }
        let unit = try String(contentsOfFile: "\(prefix)/lib/systemd/user/mdq.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=\(prefix)/bin/mdq daemon run"))
        #expect(unit.contains("Documentation=man:mdq(1)"))
        // From another folder, the import worker found in libexec.
        let fixture = PDFImportTests.fixtures.appendingPathComponent("invoice.pdf").path
        let imported = try Shell.run(
            "/bin/sh", ["-c", "cd / && '\(prefix)/bin/mdq' import '\(fixture)'"], environment: ["MDQ_IMPORT_WORKER": ""]
        )
        #expect(imported.status == 0, "\(imported.stderrText)")
        #expect(imported.stdoutText.contains("kMDItemNumberOfPages       = 2"))
        // The manual pages render without a warning, in 80 columns.
        for page in ["mdq", "mdfind", "mdls"] {
            let rendered = try Shell.run(
                "/usr/bin/man", ["--warnings", "-l", "\(prefix)/share/man/man1/\(page).1"],
                environment: ["MANWIDTH": "80"])
            #expect(rendered.status == 0 && rendered.stderrText.isEmpty, "\(page): \(rendered.stderrText)")
            for section in ["SYNOPSIS", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"] {
                #expect(rendered.stdoutText.contains("\n\(section)\n"), "\(page) has no \(section)")
            }
            // Every example is one whole line: none wraps at 80 columns.
            let examples =
                rendered.stdoutText.components(separatedBy: "\nEXAMPLES\n").last?
                .components(separatedBy: "\nSEE ALSO\n").first ?? ""
            for line in examples.split(separator: "\n") where !line.allSatisfy(\.isWhitespace) {
                #expect(line.trimmingCharacters(in: .whitespaces).hasPrefix(page + " "), "\(page): '\(line)'")
            }
        }
        // mdfind and mdls are mdq under Apple's names.
        let listed = try Shell.run("/bin/sh", ["-c", "cd / && '\(prefix)/bin/mdls' -name kMDItemKind '\(fixture)'"])
        #expect(listed.stdoutText == "kMDItemKind = \"PDF document\"\n", "\(listed.stderrText)")
        let found = try Shell.run(
            "/bin/sh",
            ["-c", "cd / && '\(prefix)/bin/mdfind' -onlyin '\(PDFImportTests.fixtures.path)' -name invoice.pdf"])
        #expect(found.stdoutText == fixture + "\n", "\(found.stderrText)")
        let completion = try Shell.run(
            "/bin/bash", ["-c", "source '\(prefix)/share/bash-completion/completions/mdq' && complete -p mdq"])
        #expect(completion.status == 0 && completion.stdoutText.contains("mdq"), "\(completion.stderrText)")
        let uninstall = try Shell.run("/bin/bash", ["\(Self.repository.path)/Scripts/uninstall", prefix])
        #expect(uninstall.status == 0, "\(uninstall.stderrText)")
        for file in expected {
            #expect(!FileManager.default.fileExists(atPath: "\(prefix)/\(file)"), "\(file) left behind")
        }
    }
}
