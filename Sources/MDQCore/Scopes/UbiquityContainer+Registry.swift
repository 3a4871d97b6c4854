import Foundation
public import MDQSystem
public import SystemPackage

extension UbiquityContainer {
    /// Where the container's external document folders are registered: a
    /// file in the user's state folder
    /// (`stateDirectory/external-documents/`), named by a hash of the
    /// container's path, so every process using the container sees the same
    /// folders and nothing is written inside the container (a scope).
    ///
    /// The file holds NUL-terminated absolute paths: the container's own
    /// first (which tells two containers whose paths hash alike apart), then
    /// the folders in registration order.
    public var externalDocumentsRegistry: FilePath {
        var checksum = Checksum64()
        withBytes(of: path.lexicallyNormalized().bytes) { checksum.update($0) }
        let hex = String(checksum.finalize(), radix: 16)
        return stateDirectory.appending("external-documents")
            .appending(String(repeating: "0", count: 16 - hex.count) + hex)
    }

    /// Where mdq kept the registrations before they moved to the state
    /// folder: read while `externalDocumentsRegistry` does not exist, so
    /// folders registered by an older mdq are still found; never written
    /// (the next registration writes the new file, which wins from then on).
    var legacyExternalDocumentsRegistry: FilePath { path.appending(".mdq/external-documents") }

    /// The registered external document folders, in registration order.
    ///
    /// Read from the registry on each call (another process may have
    /// registered one since); empty when it cannot be read.
    public var externalDocumentFolders: [FilePath] {
        registeredFolders().map(FilePath.fromBytes)
    }

    /// Registers a folder outside the container as accessible external
    /// documents (`NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope`).
    /// Registering twice is harmless.
    ///
    /// - Parameter folder: the folder; a relative path is relative to the
    ///   working directory.
    /// - Throws: `MetadataError`: a scope error (`.scopeNotFound`,
    ///   `.scopeNotFolder`, `.scopeUnreadable`) when the folder cannot be
    ///   opened, `.invalidArgument` when it lies inside the container,
    ///   `.notWritable` when the registry cannot be written; each names the
    ///   path.
    public func registerExternalDocuments(_ folder: FilePath) throws(MetadataError) {
        let absolute = Self.absolute(folder)
        if case .failure(let error) = DirectoryHandle.open(path: absolute) { throw .scope(error, path: absolute) }
        guard !CrawlRoot(path: path).covers(absolute) else {
            throw .invalidArgument("external documents must lie outside the container", path: absolute)
        }
        var folders = registeredFolders()
        guard !folders.contains(absolute.bytes) else { return }
        folders.append(absolute.bytes)
        try writeRegistry(folders)
    }

    /// Removes a registration; unknown folders are ignored.
    ///
    /// - Parameter folder: the folder as registered; a relative path is
    ///   relative to the working directory.
    /// - Throws: `MetadataError` `.notWritable` naming the registry when it
    ///   cannot be written.
    public func unregisterExternalDocuments(_ folder: FilePath) throws(MetadataError) {
        let absolute = Self.absolute(folder).bytes
        let folders = registeredFolders()
        guard folders.contains(absolute) else { return }
        try writeRegistry(folders.filter { $0 != absolute })
    }

    private static func absolute(_ folder: FilePath) -> FilePath {
        (folder.isAbsolute ? folder : ProcessEnvironment.currentDirectory.pushing(folder)).lexicallyNormalized()
    }

    /// The folders of the registry, or of the legacy one inside the
    /// container while the registry does not exist.
    private func registeredFolders() -> [[UInt8]] {
        if let knownExternalFolders { return knownExternalFolders.map(\.bytes) }
        do {
            let records = try readWholeFile(externalDocumentsRegistry, limit: 1 << 24).split(
                separator: 0, omittingEmptySubsequences: false
            ).dropLast().map(Array.init)
            guard records.first == path.lexicallyNormalized().bytes else { return [] }
            return Array(records.dropFirst())
        } catch .noSuchFileOrDirectory {
            guard let legacy = try? readWholeFile(legacyExternalDocumentsRegistry, limit: 1 << 24) else { return [] }
            return legacy.split(separator: 0).map(Array.init)
        } catch {
            return []
        }
    }

    /// Replaces the registry's list, atomically (a reader in another process
    /// sees the old list or the new one). An empty list removes the file,
    /// unless a legacy registry exists that it must keep overriding.
    private func writeRegistry(_ folders: [[UInt8]]) throws(MetadataError) {
        let registry = externalDocumentsRegistry
        if folders.isEmpty && !FileStatus.of(pathBytes: legacyExternalDocumentsRegistry.bytes).isSuccess {
            guard FileStatus.of(pathBytes: registry.bytes).isSuccess else { return }
            do {
                try FileManager.default.removeItem(atPath: registry.string)
            } catch {
                throw .notWritable("cannot remove the external documents registry", path: registry)
            }
            return
        }
        var bytes = path.lexicallyNormalized().bytes + [0]
        for folder in folders { bytes += folder + [0] }
        do {
            try PrivateFolder.ensure(registry.removingLastComponent())
        } catch {
            throw .notWritable(
                "cannot make the folder of the external documents registry (\(error.message))",
                path: error.path ?? registry, underlying: error.underlying)
        }
        do {
            var writer = try AtomicFileWriter(replacing: registry)
            try withBytes(of: bytes) { (bytes) throws(Errno) in try writer.write(bytes) }
            try writer.commit()
        } catch {
            throw .notWritable("cannot write the external documents registry", path: registry, underlying: error)
        }
    }
}
