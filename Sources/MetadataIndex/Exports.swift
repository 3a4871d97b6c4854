@_exported public import MDQCore
@_exported public import MDQDaemon
@_exported public import MDQImport
@_exported public import MDQLive
// MetadataIndex is the module embedders import. The modules below it whose
// types its API speaks come with it, as swift-nio's `NIO` brings `NIOCore`:
// MDQSystem (`MetadataError`, `Timestamp`, `EntryKind`, `EntryAccess`,
// `DaemonPaths`) and MDQCore (`MetadataPredicate`, `MetadataAttribute`,
// `CrawlRoot`, `OneShotSearch`, `SearchScope`, `UbiquityContainer`) and
// MDQImport (`Importer` for an embedder's own formats, `ImportWorkerPool`,
// `ImportReport`) and MDQLive (`ResultUpdate`, which `MetadataQuery.Update`
// names) and MDQDaemon (`IndexDaemon`, to run the daemon in process). These
// are the only `@_exported` imports: an embedder should not have to know
// how the package is cut.
@_exported public import MDQSystem
