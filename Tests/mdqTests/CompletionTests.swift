import Foundation
import TestSupport
import Testing

/// The completion scripts, loaded by the shells that read them and asked
/// what they offer for a line typed so far: subcommands (`mdq daemon st`),
/// the search's options without `find` typed first, attribute keys, and a
/// subcommand's own options. Each shell is skipped where it is not installed
/// (`.ci/run` installs all three).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CompletionTests {
    /// Lines typed so far, and what must be among the completions offered.
    static let cases: [(line: String, offers: [String])] = [
        ("mdq daemon st", ["start", "status", "stop"]),
        ("mdq index ", ["add", "list", "remove"]),
        ("mdq d", ["daemon"]),
        ("mdq --onlyin fol", ["folder"]),
        ("mdq report fol", ["folder"]),
        ("mdq --attr kMDItemFSS", ["kMDItemFSSize"]),
        ("mdq --sort kMDItemFSSize:", ["kMDItemFSSize:desc"]),
        ("mdq ls --name kMDItemDisplayN", ["kMDItemDisplayName"]),
        ("mdq daemon run --snap", ["--snapshot-interval"]),
        ("mdq --group kMDItemContentTypeT", ["kMDItemContentTypeTree"]),
        ("mdq find --attr kMDItemContentTypeT", ["kMDItemContentTypeTree"]),
    ]

    static func installed(_ shell: String) -> Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/\(shell)")
    }

    /// A folder with the script written for `shell`, and a folder to complete.
    func scriptFolder(_ shell: String) throws -> TemporaryDirectory {
        let temp = try TemporaryDirectory()
        let script = try Shell.run(MDQCommandTests.binary, ["--generate-completion-script", shell])
        #expect(script.status == 0, "\(script.stderrText)")
        let name = ["bash": "mdq.bash", "zsh": "_mdq", "fish": "mdq.fish"][shell]!
        try script.stdoutText.write(toFile: temp.path.appending(name).string, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(
            atPath: temp.path.appending("folder").string, withIntermediateDirectories: true)
        return temp
    }

    /// The completions offered for each line, one array per line, with the
    /// folder holding the script as the current folder.
    func offers(_ shell: String, in folder: String, _ complete: (String) throws -> Shell.Output) throws -> [[String]] {
        try Self.cases.map { line, _ in
            let output = try complete(line)
            #expect(output.status == 0, "\(shell) on \(line): \(output.stderrText)")
            return output.stdoutText.replacingOccurrences(of: "\r", with: "").split(separator: "\n").map {
                // fish appends a description after a tab, and a slash to folders.
                String($0.split(separator: "\t").first ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            }
        }
    }

    func expectOffers(_ offers: [[String]], shell: String) {
        for (index, (line, wanted)) in Self.cases.enumerated() {
            for word in wanted {
                #expect(offers[index].contains(word), "\(shell) offers \(offers[index]) for '\(line)', not \(word)")
            }
        }
    }

    @Test(.enabled(if: installed("bash")))
    func bashCompletes() throws {
        let temp = try scriptFolder("bash")
        let offers = try offers("bash", in: temp.path.string) { line in
            let driver = """
                source mdq.bash
                read -r -a COMP_WORDS <<<"$1"
                [[ "$1" == *" " ]] && COMP_WORDS+=("")
                COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
                _mdq mdq "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            return try Shell.run("/bin/bash", ["-c", "cd '\(temp.path.string)' && \(driver)", "bash", line])
        }
        expectOffers(offers, shell: "bash")
    }

    @Test(.enabled(if: installed("fish")))
    func fishCompletes() throws {
        let temp = try scriptFolder("fish")
        let offers = try offers("fish", in: temp.path.string) { line in
            try Shell.run(
                "/usr/bin/fish",
                ["--no-config", "-c", "cd '\(temp.path.string)'; source mdq.fish; complete -C \"$argv[1]\"", line],
                environment: ["PATH": Self.pathWithMDQ, "HOME": temp.path.string])
        }
        expectOffers(offers, shell: "fish")
    }

    /// zsh completes only in its line editor: a zsh on a pseudo-terminal
    /// (zsh/zpty) loads the script through compinit, is sent the line and a
    /// tab, and prints each match its completion functions add.
    @Test(.enabled(if: installed("zsh")))
    func zshCompletes() throws {
        let temp = try scriptFolder("zsh")
        let capture = """
            zmodload zsh/zpty
            zpty z zsh -f -i
            zpty -w z "PS1=''; RPROMPT=''; cd '\(temp.path.string)'; fpath=('\(temp.path.string)' \\$fpath)"
            zpty -w z "autoload -U compinit; compinit -u -D"
            zpty -w z "comppostfuncs=(_t_end); _t_end() { print -r -- '<<''END>>' }"
            zpty -w z "compprefuncs=(_t_start); _t_start() { compadd() { local -a hits; \\
              builtin compadd -O hits \\"\\$@\\"; print -rl -- '<<''M>>'\\${^hits}; builtin compadd \\"\\$@\\" } }"
            zpty -w z "bindkey '^I' complete-word"
            zpty -n -w z "$1"$'\\t'
            zpty -r z out '*<<END>>*'
            zpty -d z
            for part in ${(s:<<M>>:)out}; do print -r -- ${part%%$'\\r'*}; done
            """
        let offers = try offers("zsh", in: temp.path.string) { line in
            try Shell.run(
                "/usr/bin/zsh", ["-f", "-c", capture, "zsh", line],
                environment: ["PATH": Self.pathWithMDQ, "HOME": temp.path.string, "TERM": "dumb"])
        }
        expectOffers(offers, shell: "zsh")
    }

    /// PATH with the tested mdq first, for scripts that run `mdq` to
    /// complete values.
    static var pathWithMDQ: String {
        let folder = (MDQCommandTests.binary as NSString).deletingLastPathComponent
        return "\(folder):/usr/bin:/bin"
    }
}
