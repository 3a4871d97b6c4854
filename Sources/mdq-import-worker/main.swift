import MDQImport
import MetadataImporters

// The confined process the index daemon and `mdq import` read file contents
// in (see `ImportWorkerPool`): the built-in importers and those over C
// format libraries. Not for people: it speaks length-prefixed frames on its
// standard input and output.
ImportWorkerMain.run(
    Array(CommandLine.arguments.dropFirst()), importers: ImporterRegistry.builtIn + FormatImporters.all)
