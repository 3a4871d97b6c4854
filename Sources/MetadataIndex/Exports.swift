// MetadataIndex is the module embedders import: the values its API speaks
// that live in the system layer below it (`MetadataError`, `Timestamp`,
// `EntryKind`, `DeviceNumber`, `FolderAccess`, `DaemonPaths`) come with it,
// as swift-nio's `NIO` brings `NIOCore` (the one `@_exported` import: an
// embedder should not have to know how the package is cut).
@_exported public import MDQSystem
