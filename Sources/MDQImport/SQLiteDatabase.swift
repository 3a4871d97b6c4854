import CSQLite
import Glibc
import MDQCore
import MDQSystem
import SystemPackage

/// A SQLite connection, thin: open, run statements, read rows. The import
/// store's engine; nothing else in mdq talks to SQLite.
///
/// Not thread-safe: one owner uses a connection (the store keeps it behind
/// its lock). Opened in the multi-thread mode (no SQLite-level mutexes).
final class SQLiteDatabase {
    /// A SQLite failure: its result code and message.
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var message: String

        var description: String { message }
        /// The file is not a database, or is damaged.
        var isCorruption: Bool { code & 0xFF == SQLITE_CORRUPT || code & 0xFF == SQLITE_NOTADB }
    }

    private let handle: OpaquePointer

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Opens (creating) the database at `path`.
    static func open(_ path: FilePath) throws(Failure) -> SQLiteDatabase {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = path.withPlatformString { sqlite3_open_v2($0, &handle, flags, nil) }
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let handle { sqlite3_close_v2(handle) }
            throw Failure(code: rc, message: message)
        }
        // Private to the user whatever the umask (the folder is, too).
        _ = syscallResult { path.withPlatformString { chmod($0, 0o600) } }
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, 5000)
        return SQLiteDatabase(handle: handle)
    }

    /// Deletes a database file and its WAL and shared-memory files.
    static func remove(at path: FilePath) {
        for suffix in ["", "-wal", "-shm"] {
            _ = FilePath(path.string + suffix).withPlatformString { name in syscallResult { unlink(name) } }
        }
    }

    private func failure(_ rc: Int32) -> Failure {
        Failure(code: rc, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs statements that return no rows.
    func execute(_ sql: String) throws(Failure) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc) }
    }

    /// A prepared statement.
    func prepare(_ sql: String) throws(Failure) -> Statement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc) }
        return Statement(database: self, handle: statement)
    }

    /// An FTS5 tokenizer of this connection (`unicode61` with its
    /// arguments), to split texts outside any table exactly as an FTS5
    /// table made with it does.
    ///
    /// - Throws: `Failure` when the connection has no FTS5 or no such
    ///   tokenizer, or refuses the arguments.
    func tokenizer(_ name: String, arguments: [String]) throws(Failure) -> Tokenizer {
        var cArguments = arguments.map { strdup($0) }
        defer { for argument in cArguments { free(argument) } }
        let made = cArguments.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { arguments in
                mdq_fts5_tokenizer_open(handle, name, arguments.baseAddress, Int32(arguments.count))
            }
        }
        guard let made else { throw Failure(code: SQLITE_ERROR, message: "no FTS5 tokenizer \(name)") }
        return Tokenizer(made, owner: self)
    }

    /// An FTS5 tokenizer run outside any table (`tokenizer(_:arguments:)`).
    final class Tokenizer {
        private let handle: UnsafeMutablePointer<mdq_fts5_tokenizer>
        // The connection outlives its tokenizer.
        private let owner: SQLiteDatabase

        fileprivate init(_ handle: UnsafeMutablePointer<mdq_fts5_tokenizer>, owner: SQLiteDatabase) {
            self.handle = handle
            self.owner = owner
        }

        deinit {
            mdq_fts5_tokenizer_close(handle)
        }

        /// Calls `body` with each token of `text`, as FTS5 indexes it.
        func forEachToken(in text: [UInt8], _ body: (UnsafeRawBufferPointer) -> Void) {
            typealias Body = (UnsafeRawBufferPointer) -> Void
            withoutActuallyEscaping(body) { escapable in
                var box: Body = escapable
                withUnsafeMutablePointer(to: &box) { context in
                    text.withUnsafeBufferPointer { bytes in
                        bytes.withMemoryRebound(to: CChar.self) { chars in
                            _ = mdq_fts5_tokenize(handle, chars.baseAddress, Int32(chars.count), context) {
                                context, _, token, length, _, _ in
                                guard let context, let token, length > 0 else { return SQLITE_OK }
                                context.assumingMemoryBound(to: Body.self).pointee(
                                    UnsafeRawBufferPointer(start: token, count: Int(length)))
                                return SQLITE_OK
                            }
                        }
                    }
                }
            }
        }
    }

    /// The rowid of the last insert.
    var lastInsertedRow: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows the last statement changed.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// A prepared statement: bind (from 1), step, read columns (from 0).
    final class Statement {
        private let database: SQLiteDatabase
        private let handle: OpaquePointer

        fileprivate init(database: SQLiteDatabase, handle: OpaquePointer) {
            self.database = database
            self.handle = handle
        }

        deinit {
            sqlite3_finalize(handle)
        }

        /// Clears bindings and rewinds, for the next use.
        func reset() {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }

        func bind(_ index: Int32, _ value: Int64) {
            sqlite3_bind_int64(handle, index, value)
        }

        func bind(_ index: Int32, _ value: [UInt8]) {
            value.withUnsafeBytes { raw in
                _ = sqlite3_bind_blob64(
                    handle, index, raw.baseAddress, sqlite3_uint64(raw.count), mdq_sqlite_transient())
            }
        }

        func bind(_ index: Int32, text value: String) {
            sqlite3_bind_text(handle, index, value, -1, mdq_sqlite_transient())
        }

        func bindNull(_ index: Int32) {
            sqlite3_bind_null(handle, index)
        }

        /// Advances: true with a row to read, false when done.
        func step() throws(Failure) -> Bool {
            let rc = sqlite3_step(handle)
            switch rc {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw database.failure(rc)
            }
        }

        /// Runs a statement that returns no rows, then resets it.
        func run() throws(Failure) {
            defer { reset() }
            _ = try step()
        }

        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

        func bytes(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(handle, column))
            guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: count))
        }

        func text(_ column: Int32) -> String {
            guard let pointer = sqlite3_column_text(handle, column) else { return "" }
            return String(cString: pointer)
        }
    }
}
