import Glibc
import MDQVersion

// `mdq`'s front door. The searches a shell runs most (a word, a glob, a
// predicate, `--name`, with `--count`, `-0`, `--hidden`, `-a`, a folder)
// are sent to the index daemon and printed from here, as is `--version`:
// this program loads neither Foundation, ICU nor ArgumentParser, so it
// starts as fast as a C program's start-up allows. Everything else, and
// any doubt (no daemon, a folder it does not index, a query it cannot
// read, a personality such as `mdfind`), runs the full command line
// (`mdq-full`) with the same arguments, which gives the same answer and
// every message the usual way.

if CommandLine.arguments.count == 2, ["--version", "-V"].contains(CommandLine.arguments[1]),
    QuickSearch.runsAsMDQ(CommandLine.arguments[0])
{
    let line = Array((MDQVersion.string + "\n").utf8)
    _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    exit(0)
}
if let search = QuickSearch(CommandLine.arguments) {
    search.answer()
}
FullCommand.run()
