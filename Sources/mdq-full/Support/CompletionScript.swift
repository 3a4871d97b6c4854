import ArgumentParser
import Foundation

/// `mdq --generate-completion-script SHELL`.
///
/// ArgumentParser's scripts complete a default subcommand's options only
/// after its name (`mdq find --onlyin <TAB>`), and nobody types `find`. So
/// the scripts are generated from this stand-in, which has the search's
/// option groups at the top and the subcommands below, as people type them.
struct CompletionScript: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mdq", version: MDQ.version,
        subcommands: [
            FindCommand.self, ListCommand.self, ImportCommand.self, DaemonCommand.self, IndexCommand.self,
            SystemCommand.self,
        ])

    @OptionGroup var scope: ScopeOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var query: QueryOptions

    /// The script for the shell named by `--generate-completion-script`
    /// among `arguments`, or nil when the arguments do not ask for one.
    static func requested(by arguments: [String]) -> String? {
        var shellName: String?
        if arguments.count == 2, arguments[0] == "--generate-completion-script" { shellName = arguments[1] }
        if arguments.count == 1, arguments[0].hasPrefix("--generate-completion-script=") {
            shellName = String(arguments[0].dropFirst("--generate-completion-script=".count))
        }
        guard let shellName, let shell = CompletionShell(rawValue: shellName) else { return nil }
        let script = completionScript(for: shell)
        switch shell {
        case .bash: return dispatchingSubcommands(bash: script) ?? script
        case .zsh: return dispatchingSubcommands(zsh: script) ?? script
        case .fish: return dispatchingSubcommands(fish: script) ?? script
        default: return script
        }
    }

    // ArgumentParser's scripts assume a command with subcommands has no
    // positional arguments of its own, and mdq's root has the query and its
    // folders: bash completes folders and never reaches the subcommands, fish
    // reads every word as a folder, and zsh's root specification is refused
    // outright (two first arguments). Each script is mended below so that a
    // subcommand's name as the first word hands the rest of the line to that
    // subcommand's completions, and the first word also offers the
    // subcommands. When a script's shape is not the one expected, it is
    // returned as generated (the completion tests then fail).

    /// The subcommands' names, as typed after `mdq`.
    private static var subcommandNames: [String] {
        configuration.subcommands.map { $0._commandName }
    }

    /// `script` with `insertion` put after the first `anchor` found at or
    /// after `from` (itself an anchor found in turn), or nil.
    private static func inserting(
        _ insertion: String, in script: String, after anchors: [String], before: Bool = false
    ) -> String? {
        var position = script.startIndex
        var found: Range<String.Index>?
        for anchor in anchors {
            guard let range = script.range(of: anchor, range: position..<script.endIndex) else { return nil }
            found = range
            position = range.upperBound
        }
        guard let found else { return nil }
        var result = script
        let at = before ? found.lowerBound : found.upperBound
        result.replaceSubrange(at..<at, with: insertion)
        return result
    }

    private static func dispatchingSubcommands(bash script: String) -> String? {
        let names = subcommandNames.joined(separator: "|")
        let offer = """
                    if [[ "${COMP_CWORD}" -eq 1 ]]; then
                        COMPREPLY+=($(compgen -W '\(subcommandNames.joined(separator: " "))' -- "${cur}"))
                    fi

            """
        let dispatch = """
                case "${COMP_WORDS[1]}" in
                \(names))
                    if [[ "${COMP_CWORD}" -gt 1 ]]; then
                        local -a unparsed_words=("${COMP_WORDS[@]:2:$((COMP_CWORD - 1))}")
                        "_mdq_${COMP_WORDS[1]}"
                        return
                    fi
                    ;;
                esac

            """
        // The offer goes in first: it is found after the dispatch's anchor.
        let root = ["_mdq() {\n", "    local -i positional_number\n"]
        guard
            let offered = inserting(
                offer, in: script,
                after: root + ["    # Offer positional completions\n", "        __mdq_add_completions -d\n"])
        else { return nil }
        return inserting(dispatch, in: offered, after: root)
    }

    private static func dispatchingSubcommands(zsh script: String) -> String? {
        guard
            let rootEnd = script.range(
                of: "\n}\n", range: (script.range(of: "\n_mdq() {\n")?.upperBound ?? script.endIndex)..<script.endIndex)
        else { return nil }
        var root = String(script[..<rootEnd.upperBound])
        let rest = script[rootEnd.upperBound...]
        // The root's two specifications of its first argument (the query,
        // and the subcommand) make _arguments refuse all of it: the query's
        // place offers the subcommands, and the dispatch below replaces the
        // `->arg` state.
        for (old, new) in [
            ("        ':query:'\n", "        ':query:->command'\n"), ("        '(-): :->command'\n", ""),
            ("        '(-)*:: :->arg'\n", ""),
        ] {
            guard let range = root.range(of: old) else { return nil }
            root.replaceSubrange(range, with: new)
        }
        let dispatch = """

                if (( CURRENT > 2 )) && [[ "${words[2]}" == (\(subcommandNames.joined(separator: "|"))) ]]; then
                    shift words
                    (( CURRENT-- ))
                    "_mdq_${words[1]}"
                    return
                fi

            """
        guard let mended = inserting(dispatch, in: root, after: ["    local -A opt_args\n"]) else { return nil }
        return escapingColons(zsh: mended + rest)
    }

    /// The zsh script with the colons inside its value lists escaped:
    /// `_describe` reads `kMDItemFSSize:desc` as the value `kMDItemFSSize`
    /// described as "desc".
    private static func escapingColons(zsh script: String) -> String {
        script.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard line.hasPrefix("    local -ar ___"), let open = line.firstIndex(of: "(") else { return String(line) }
            let values = line[line.index(after: open)...].replacingOccurrences(of: ":", with: "\\:")
            return line[...open] + values
        }.joined(separator: "\n")
    }

    private static func dispatchingSubcommands(fish script: String) -> String? {
        let names = subcommandNames.joined(separator: " ")
        // The root's repeating positional swallows every word, subcommand
        // names included: a subcommand's name as the first word skips it.
        guard let rootParse = script.range(of: "    case 'mdq'\n        __mdq_parse_subcommand "),
            let lineEnd = script.range(of: "\n", range: rootParse.upperBound..<script.endIndex)
        else { return nil }
        let parseLine = String(
            script[script.index(rootParse.lowerBound, offsetBy: "    case 'mdq'\n".count)..<lineEnd.lowerBound])
        let replacement = """
                    if contains -- "$unparsed_tokens[2]" \(names)
                        set -a commands $unparsed_tokens[1]
                        set -e unparsed_tokens[1]
                    else
                \(parseLine.replacingOccurrences(of: "\n", with: ""))
                    end
            """
        var result = script
        result.replaceSubrange(
            script.index(rootParse.lowerBound, offsetBy: "    case 'mdq'\n".count)..<lineEnd.lowerBound,
            with: replacement)
        // The subcommands are offered for the first word, where the query
        // goes, not after it.
        let offered = "'__mdq_should_offer_completions_for_positional \"mdq\" -eq 2' -fa '"
        guard result.contains(offered) else { return nil }
        return result.replacingOccurrences(
            of: offered, with: "'__mdq_should_offer_completions_for_positional \"mdq\" -eq 1' -fa '")
    }
}
