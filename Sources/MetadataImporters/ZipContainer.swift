import CZip
import MDQCore
import MDQImport
import MDQSystem

/// A ZIP container (OOXML, OpenDocument, EPUB) read through libzip, with a
/// bound on what it may inflate: a zip bomb (an entry claiming or producing
/// gigabytes) yields its first `limit` bytes, never more, whatever its
/// headers say.
final class ZipContainer {
    private let archive: OpaquePointer
    /// Bytes still allowed to be inflated, over all entries.
    private var budget: Int

    private init(archive: OpaquePointer, budget: Int) {
        self.archive = archive
        self.budget = budget
    }

    deinit {
        zip_discard(archive)
    }

    /// Opens the container in `file`.
    ///
    /// - Throws: `ImportFailure` when it is not a ZIP file.
    static func open(_ file: ContentFile, budget: Int) throws(ImportFailure) -> ZipContainer {
        guard let fd = file.duplicateDescriptor() else { throw ImportFailure("cannot read the file (no descriptor)") }
        var code: Int32 = 0
        // libzip takes the descriptor and closes it with the archive.
        guard let archive = zip_fdopen(fd, ZIP_RDONLY, &code) else {
            var error = zip_error_t()
            zip_error_init_with_code(&error, code)
            defer { zip_error_fini(&error) }
            throw ImportFailure("not a readable ZIP container: \(String(cString: zip_error_strerror(&error)))")
        }
        return ZipContainer(archive: archive, budget: budget)
    }

    /// Entry names, in the archive's order (at most `limit` of them).
    func names(limit: Int = 100_000) -> [String] {
        let count = min(Int(zip_get_num_entries(archive, 0)), limit)
        return (0..<max(0, count)).compactMap { index in
            zip_get_name(archive, zip_uint64_t(index), 0).map { String(cString: $0) }
        }
    }

    /// The inflated bytes of entry `name`, at most `limit` of them (and of
    /// what the container's budget has left); nil when there is no such
    /// entry or it cannot be read.
    func read(_ name: String, limit: Int = .max) -> [UInt8]? {
        let index = zip_name_locate(archive, name, 0)
        guard index >= 0, let entry = zip_fopen_index(archive, zip_uint64_t(index), 0) else { return nil }
        defer { zip_fclose(entry) }
        let cap = min(limit, budget)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while bytes.count < cap {
            let wanted = min(chunk.count, cap - bytes.count)
            let n = chunk.withUnsafeMutableBytes { zip_fread(entry, $0.baseAddress!, zip_uint64_t(wanted)) }
            guard n > 0 else { break }
            bytes += chunk[..<Int(n)]
        }
        budget -= bytes.count
        return bytes
    }
}
