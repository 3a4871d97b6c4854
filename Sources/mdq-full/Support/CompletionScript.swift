import ArgumentParser
import Foundation

/// `mdq --generate-completion-script SHELL`.
///
/// ArgumentParser's scripts complete a default subcommand's options only
/// after its name (`mdq find --onlyin <TAB>`), and nobody types `find`. So
/// the scripts are generated from this stand-in, which has the search's
/// option groups at the top and `ls` below, as people type them.
struct CompletionScript: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mdq", version: MDQ.version, subcommands: [ListCommand.self])

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
        return shell == .bash ? dispatchingLs(bash: script) : script
    }

    /// The bash script with `mdq ls ...` sent to ls's completions first:
    /// the generated root completes its positional folders before it looks
    /// for a subcommand, and shares `--name` with ls.
    private static func dispatchingLs(bash script: String) -> String {
        let anchor = "_mdq() {\n"
        guard let start = script.range(of: anchor),
            let locals = script.range(of: "    local -i positional_number\n", range: start.upperBound..<script.endIndex)
        else { return script }
        let dispatch = """
                if [[ "${COMP_WORDS[1]}" == ls && "${COMP_CWORD}" -gt 1 ]]; then
                    local -a unparsed_words=("${COMP_WORDS[@]:2:$((COMP_CWORD - 1))}")
                    _mdq_ls
                    return
                fi

            """
        return script.replacingCharacters(in: locals.upperBound..<locals.upperBound, with: dispatch)
    }
}
