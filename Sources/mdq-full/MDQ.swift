import ArgumentParser
import MDQVersion
import MetadataIndex

/// `mdq`: `mdfind` and `mdls` for Linux. Parses, calls the library, prints.
///
/// The root only dispatches: `find` (the default, so `mdq QUERY` runs it)
/// and `ls`.
@main
struct MDQ: ParsableCommand {
    /// mdq's version, printed by `--version` and `-V`.
    static let version = MDQVersion.string

    /// Both forms, for the usage line of `mdq --help` and of the manual.
    static let usage = """
        mdq [<options>] <query> [<dir> ...]
        mdq ls [<options>] <path> ...
        mdq daemon run|start|stop|status
        mdq index add|remove|list ...
        """

    static let configuration = CommandConfiguration(
        commandName: "mdq",
        abstract: "Find files by name or metadata query (mdfind) and print their attributes (mdls).",
        usage: usage,
        discussion: """
            mdq QUERY is short for mdq find QUERY: the search and its options are the find \
            subcommand. mdq ls PATH... prints attributes, like mdls. mdq daemon and mdq index \
            run the index daemon, which answers searches without crawling; mdq system runs the \
            system index (root), which answers every user for whole filesystems.
            """,
        version: version,
        subcommands: [
            FindCommand.self, ListCommand.self, ImportCommand.self, DaemonCommand.self, IndexCommand.self,
            SystemCommand.self, SharedCommand.self, HostsCommand.self,
        ],
        defaultSubcommand: FindCommand.self
    )

    /// Runs the command with mdq's exit statuses: 0 success, 1 runtime error,
    /// 2 usage or query syntax error, each with a one-line message on stderr
    /// (plus the caret lines for a query error).
    static func main() {
        // Before any thread starts: SIGINT/SIGTERM are taken by a sigwait
        // thread in live mode and in a one-shot search.
        ProcessEnvironment.blockInterruptSignals()
        // Run as mdfind or mdls (links to mdq): Apple's command line, said
        // the mdq way.
        var arguments = Personality.arguments(
            for: CommandLine.arguments.first ?? "mdq", Array(CommandLine.arguments.dropFirst()))
        switch arguments {
        case ["-V"]:
            arguments = ["--version"]
        case ["-h"], ["--help"], ["help"]:
            // The search is what `mdq` is for: its options are the help.
            StandardOutput.write(Array(helpMessage(for: FindCommand.self).utf8) + [0x0A])
            ProcessExit.exit(0)
        default:
            if let script = CompletionScript.requested(by: arguments) {
                StandardOutput.write(Array(script.utf8))
                ProcessExit.exit(0)
            }
        }
        if let mistake = CommandLineMistake.find(in: arguments) {
            Diagnostics.error(mistake)
            ProcessExit.exit(2)
        }
        arguments = CommandLineMistake.mended(arguments)
        if arguments == ["index"] || arguments == ["daemon"] || arguments == ["system"] {
            // A subcommand's name alone: its help, and the search it may
            // have meant.
            let help = helpMessage(
                for: arguments == ["index"]
                    ? IndexCommand.self : arguments == ["daemon"] ? DaemonCommand.self : SystemCommand.self)
            Diagnostics.write(
                help + "\n\nTo search for names containing \"\(arguments[0])\": mdq find \(arguments[0])\n")
            ProcessExit.exit(2)
        }
        let command: any ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            Diagnostics.error(UsageMessage.text(for: error, arguments: arguments))
            ProcessExit.exit(2)
        }
        // A one-shot query does not watch, so a refusal here is not fatal;
        // early, while descriptors are low (libinotifytools uses select()).
        if command is FindCommand { _ = try? MetadataEngine.initializeWatching() }
        var mutable = command
        do {
            try mutable.run()
        } catch let error as MetadataError {
            Diagnostics.error(error.description)
            ProcessExit.exit(error.code == .querySyntax || error.code == .invalidArgument ? 2 : 1)
        } catch let error as ValidationError {
            Diagnostics.error(error.message + "\n" + UsageMessage.hint(for: command))
            ProcessExit.exit(2)
        } catch let error as ExitCode {
            ProcessExit.exit(error.rawValue)
        } catch {
            // `mdq help ls` and friends arrive here as errors to print.
            if exitCode(for: error) == .success { exit(withError: error) }
            Diagnostics.error(message(for: error))
            ProcessExit.exit(1)
        }
        ProcessExit.exit(0)
    }
}
