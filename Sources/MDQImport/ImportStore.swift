package import MDQCore
package import MDQSystem
package import SystemPackage

/// Imported attributes and text on disk: SQLite, one row per file keyed by
/// the file's identity (device and inode, so a rename keeps its data), its
/// text kept compressed (zlib) in the row and indexed by a contentless
/// FTS5 table (words, case and diacritics folded, no positions: word and
/// word-prefix queries need none), so the store stays a small share of the
/// corpus.
///
/// Substrings: a run of letters inside the text lies inside one indexed
/// word, so `CONTAINS` looks up the words that hold it, then the files
/// that hold those words. The words are kept in a table of their own
/// (`words`, each with its key: `SubstringKeys`) with a trigram index over
/// the keys (`word_grams`): FTS5 lists no term without reading every
/// document list (`fts5vocab` took 63 ms on 10,000 documents, more with
/// every file), while the trigram index finds the keys holding a run of
/// three letters or more from a few short lists. Each text's words are
/// read with FTS5's own tokenizer, run outside the table with the same
/// arguments, so the table holds exactly the index's terms; the words met
/// lately are remembered (`KnownWords`), so a common word costs no
/// lookup. Words are not taken out when the last text holding one goes (a
/// stale word costs a lookup that finds no file); once a quarter of the
/// stored texts were replaced or removed, those words are pruned against
/// the index's vocabulary (`checkpoint`).
///
/// - Each row remembers the modification time and size it was imported
///   at: a file whose stamp moved is imported again; one that failed is
///   not retried until it changes.
/// - Writes are transactional (a batch of imports is one transaction, in
///   WAL mode): a crash loses at most the batch, never the store.
/// - The file is private to the user (0600, in the private state folder).
///   One that is not a database, is damaged or has another schema version
///   is deleted and rebuilt, with one log line; nothing else is lost than
///   the work to import again.
///
/// Thread-safe: one connection behind a lock.
package final class ImportStore: Sendable {
    /// A stored import.
    package struct Record: Sendable, Equatable {
        package var stamp: FileStamp
        /// The type the leading bytes named, when it differed.
        package var sniffedType: String?
        package var failure: String?
        /// Every imported value but the text.
        package var values: ImportedValues
    }

    /// The schema's version; another one is rebuilt, except
    /// `versionWithoutWords`, which gains the table of words in place.
    static let schemaVersion = 4
    static let versionWithoutWords = 3

    /// How the full-text index splits and folds text: the index's, and the
    /// tokenizer that reads the words for `words`, which must agree.
    static let tokenizerName = "unicode61"
    static let tokenizerArguments = ["remove_diacritics", "2"]
    static var tokenizer: String { ([tokenizerName] + tokenizerArguments).joined(separator: " ") }

    package let path: FilePath
    private let connection: Locked<Connection>
    /// A second connection for what queries and the engine read (a file's
    /// import, the full-text index, the words): the engine asks under its
    /// lock and a query waits for its answer, and neither must wait for a
    /// batch being written (WAL lets one writer and readers work at once;
    /// a reader sees what was last committed).
    private let reader: Locked<Reader>

    final class Reader {
        let database: SQLiteDatabase
        let lookup: SQLiteDatabase.Statement
        let wordsHolding: SQLiteDatabase.Statement
        let shortWordsHolding: SQLiteDatabase.Statement

        init(_ path: FilePath) throws(SQLiteDatabase.Failure) {
            database = try SQLiteDatabase.open(path)
            lookup = try database.prepare(Connection.lookupSQL)
            wordsHolding = try database.prepare("SELECT term FROM word_grams WHERE key LIKE ?1 LIMIT ?2")
            shortWordsHolding = try database.prepare("SELECT term FROM words WHERE instr(key, ?1) > 0 LIMIT ?2")
        }
    }

    final class Connection {
        let database: SQLiteDatabase
        let lookup: SQLiteDatabase.Statement
        let upsert: SQLiteDatabase.Statement
        let deleteText: SQLiteDatabase.Statement
        let insertText: SQLiteDatabase.Statement
        let deleteFile: SQLiteDatabase.Statement
        let oldText: SQLiteDatabase.Statement
        let writeText: SQLiteDatabase.Statement
        let addWord: SQLiteDatabase.Statement
        let tokenizer: SQLiteDatabase.Tokenizer
        let keys = SubstringKeys()
        var knownWords = KnownWords()
        let compressor = Deflate.Compressor()
        let countForgotten: SQLiteDatabase.Statement

        static let lookupSQL =
            "SELECT id, modified, size, sniffed, failure, attributes, text FROM files WHERE device = ?1 AND inode = ?2"

        init(_ database: SQLiteDatabase) throws(SQLiteDatabase.Failure) {
            self.database = database
            lookup = try database.prepare(Self.lookupSQL)
            upsert = try database.prepare(
                """
                INSERT INTO files(device, inode, modified, size, sniffed, failure, attributes)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                ON CONFLICT(device, inode) DO UPDATE SET modified = ?3, size = ?4, sniffed = ?5, failure = ?6,
                attributes = ?7 RETURNING id
                """)
            // A contentless FTS5 table forgets a row's words only when told
            // them again: the old text comes from the row's compressed copy.
            deleteText = try database.prepare("INSERT INTO content(content, rowid, body) VALUES ('delete', ?1, ?2)")
            insertText = try database.prepare("INSERT INTO content(rowid, body) VALUES (?1, ?2)")
            deleteFile = try database.prepare(
                "DELETE FROM files WHERE device = ?1 AND inode = ?2 RETURNING id, text")
            oldText = try database.prepare("SELECT id, text FROM files WHERE device = ?1 AND inode = ?2")
            writeText = try database.prepare("UPDATE files SET text = ?2, ascii = ?3 WHERE id = ?1")
            addWord = try database.prepare("INSERT OR IGNORE INTO words(term, key) VALUES (?1, ?2)")
            tokenizer = try database.tokenizer(ImportStore.tokenizerName, arguments: ImportStore.tokenizerArguments)
            countForgotten = try database.prepare(
                "UPDATE counters SET value = value + ?1 WHERE name = 'forgotten texts'")
        }
    }

    private init(path: FilePath, connection: Connection) throws(SQLiteDatabase.Failure) {
        self.path = path
        self.connection = Locked(connection)
        reader = Locked(try Reader(path))
    }

    /// Opens the store at `path`, creating it, or rebuilding it (with one
    /// `log` line) when it is not a sound store of this version.
    ///
    /// - Throws: `MetadataError` `.persistence` when no store can be made
    ///   there (the folder is not writable).
    package static func open(at path: FilePath, log: (String) -> Void = { _ in }) throws(MetadataError) -> ImportStore {
        do {
            return try ImportStore(path: path, connection: connect(path))
        } catch {
            log("import store \(path.string) discarded (\(error.description)); importing again")
        }
        SQLiteDatabase.remove(at: path)
        do {
            return try ImportStore(path: path, connection: connect(path))
        } catch {
            throw MetadataError.persistence("cannot create the import store: \(error.description)", path: path)
        }
    }

    private static func connect(_ path: FilePath) throws(SQLiteDatabase.Failure) -> Connection {
        let database = try SQLiteDatabase.open(path)
        let version = try database.prepare("PRAGMA user_version")
        _ = try version.step()
        let found = Int(version.integer(0))
        version.reset()
        if found != 0 && found != versionWithoutWords && found != schemaVersion {
            throw SQLiteDatabase.Failure(code: 0, message: "schema version \(found), expected \(schemaVersion)")
        }
        let check = try database.prepare("PRAGMA quick_check(1)")
        _ = try check.step()
        let verdict = check.text(0)
        check.reset()
        guard verdict == "ok" else {
            throw SQLiteDatabase.Failure(code: 11, message: "integrity check: \(verdict)")
        }
        try database.execute(
            """
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS files(
                id INTEGER PRIMARY KEY, device INTEGER NOT NULL, inode INTEGER NOT NULL,
                modified INTEGER NOT NULL, size INTEGER NOT NULL, sniffed TEXT, failure TEXT, attributes BLOB,
                text BLOB, ascii INTEGER NOT NULL DEFAULT 1, UNIQUE(device, inode));
            CREATE INDEX IF NOT EXISTS files_not_ascii ON files(ascii) WHERE ascii = 0;
            CREATE VIRTUAL TABLE IF NOT EXISTS content USING fts5(
                body, content = '', detail = none, tokenize = '\(tokenizer)');
            CREATE VIRTUAL TABLE IF NOT EXISTS content_vocabulary USING fts5vocab(content, 'row');
            BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS words(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, key TEXT NOT NULL);
            CREATE VIRTUAL TABLE IF NOT EXISTS word_grams USING fts5(
                key, term UNINDEXED, content = 'words', content_rowid = 'id', tokenize = 'trigram', detail = none);
            CREATE TRIGGER IF NOT EXISTS words_added AFTER INSERT ON words BEGIN
                INSERT INTO word_grams(rowid, key, term) VALUES (new.id, new.key, new.term);
            END;
            CREATE TRIGGER IF NOT EXISTS words_removed AFTER DELETE ON words BEGIN
                INSERT INTO word_grams(word_grams, rowid, key, term) VALUES ('delete', old.id, old.key, old.term);
            END;
            CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
            INSERT OR IGNORE INTO counters VALUES ('forgotten texts', 0);
            COMMIT;
            """)
        let connection = try Connection(database)
        if found != schemaVersion {
            // A store without the table has every word in its index, none in
            // `words` yet.
            try database.execute("BEGIN IMMEDIATE")
            if found == versionWithoutWords {
                let vocabulary = try database.prepare("SELECT term FROM content_vocabulary")
                var terms: Set<[UInt8]> = []
                while try vocabulary.step() { terms.insert(vocabulary.bytes(0)) }
                try connection.addWords(terms)
            }
            try database.execute("PRAGMA user_version = \(schemaVersion); COMMIT")
        }
        return connection
    }

    /// The stored import of a file, if any.
    package func record(for key: FileKey) -> Record? {
        recordAndText(for: key, text: false)?.record
    }

    /// The stored import of a file and, with `text`, its text's bytes: one
    /// read for both.
    package func recordAndText(for key: FileKey, text: Bool) -> (record: Record, text: [UInt8]?)? {
        reader.withLock { c -> (Record, [UInt8]?)? in
            let s = c.lookup
            defer { s.reset() }
            s.bind(1, Int64(bitPattern: key.device))
            s.bind(2, Int64(bitPattern: key.inode))
            guard (try? s.step()) == true else { return nil }
            var reader = ImportWire.Reader(s.bytes(5))
            let record = Record(
                stamp: FileStamp(modification: s.integer(1), size: UInt64(bitPattern: s.integer(2))),
                sniffedType: s.isNull(3) ? nil : s.text(3), failure: s.isNull(4) ? nil : s.text(4),
                values: ImportWire.readValues(&reader) ?? ImportedValues())
            return (record, text && !s.isNull(6) ? Deflate.decompress(s.bytes(6)) : nil)
        }
    }

    /// The stamp a file was imported at, if it was: what deciding whether
    /// to import it again needs, without decoding its values.
    package func stamp(for key: FileKey) -> FileStamp? {
        reader.withLock { c -> FileStamp? in
            let s = c.lookup
            defer { s.reset() }
            s.bind(1, Int64(bitPattern: key.device))
            s.bind(2, Int64(bitPattern: key.inode))
            guard (try? s.step()) == true else { return nil }
            return FileStamp(modification: s.integer(1), size: UInt64(bitPattern: s.integer(2)))
        }
    }

    /// Whether a file with this stamp needs importing (never imported, or
    /// changed since).
    func needsImport(_ key: FileKey, stamp: FileStamp) -> Bool {
        self.stamp(for: key) != stamp
    }

    /// Runs `body` while a write is under way: the writer's lock held and
    /// `key`'s row changed to `stamp` in a transaction not yet committed
    /// (rolled back after). Tests use it to show that lookups neither wait
    /// for a write nor see it before its commit.
    func whileWriting(_ key: FileKey, stamp: FileStamp, _ body: () -> Void) throws(SQLiteDatabase.Failure) {
        try connection.withLock { (c) throws(SQLiteDatabase.Failure) in
            try c.database.execute("BEGIN IMMEDIATE")
            defer { try? c.database.execute("ROLLBACK") }
            try c.database.execute(
                "UPDATE files SET modified = \(stamp.modification), size = \(Int64(bitPattern: stamp.size)) "
                    + "WHERE device = \(Int64(bitPattern: key.device)) AND inode = \(Int64(bitPattern: key.inode))")
            body()
        }
    }

    /// The stored text of a file.
    package func text(for key: FileKey) -> String? {
        recordAndText(for: key, text: true)?.text.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Stores imports, in one transaction.
    ///
    /// - Throws: `MetadataError` `.persistence` when the write fails (the
    ///   transaction is rolled back: none of the batch is stored).
    package func save(_ imports: [(key: FileKey, stamp: FileStamp, report: ImportReport)]) throws(MetadataError) {
        try connection.withLock { (c) throws(MetadataError) in
            do {
                try c.database.execute("BEGIN IMMEDIATE")
                var words: Set<[UInt8]> = []
                var forgotten = 0
                for (key, stamp, report) in imports {
                    // The words of the text stored before, to take out of
                    // the full-text index.
                    c.oldText.bind(1, Int64(bitPattern: key.device))
                    c.oldText.bind(2, Int64(bitPattern: key.inode))
                    if try c.oldText.step(), !c.oldText.isNull(1), let old = Deflate.decompress(c.oldText.bytes(1)) {
                        c.deleteText.bind(1, c.oldText.integer(0))
                        c.deleteText.bind(2, text: String(decoding: old, as: UTF8.self))
                        c.oldText.reset()
                        try c.deleteText.run()
                        forgotten += 1
                    } else {
                        c.oldText.reset()
                    }
                    var values = report.values
                    let text = values[.textContent]
                    values[.textContent] = nil
                    values[.sniffedContentType] = nil
                    var encoded = ImportWire.Writer()
                    ImportWire.appendValues(values, to: &encoded)
                    let s = c.upsert
                    s.bind(1, Int64(bitPattern: key.device))
                    s.bind(2, Int64(bitPattern: key.inode))
                    s.bind(3, stamp.modification)
                    s.bind(4, Int64(bitPattern: stamp.size))
                    if let sniffed = report.sniffedType { s.bind(5, text: sniffed) } else { s.bindNull(5) }
                    let failure = report.failure?.reason ?? report.steps.compactMap(\.failure?.reason).first
                    if let failure { s.bind(6, text: failure) } else { s.bindNull(6) }
                    s.bind(7, encoded.out)
                    _ = try s.step()
                    let id = s.integer(0)
                    s.reset()
                    c.writeText.bind(1, id)
                    if case .text(let bytes)? = text {
                        c.writeText.bind(2, c.compressor.compress(bytes))
                        c.writeText.bind(3, Int64(bytes.allSatisfy { $0 < 0x80 } ? 1 : 0))
                        try c.writeText.run()
                        c.insertText.bind(1, id)
                        c.insertText.bind(2, text: String(decoding: bytes, as: UTF8.self))
                        try c.insertText.run()
                        c.tokenizer.forEachToken(in: bytes) { token in
                            if !c.knownWords.contains(token) { words.insert(Array(token)) }
                        }
                    } else {
                        c.writeText.bindNull(2)
                        c.writeText.bind(3, Int64(1))
                        try c.writeText.run()
                    }
                }
                try c.addWords(words)
                try c.count(forgotten: forgotten)
                try c.database.execute("COMMIT")
                // Known once committed: a rolled-back word is not in `words`.
                for word in words { c.knownWords.insert(word) }
            } catch {
                try? c.database.execute("ROLLBACK")
                throw MetadataError.persistence("cannot write the import store: \(error)", path: path)
            }
        }
    }

    /// Replaces the stored values of `attributes` for files already
    /// imported (their other values, text and stamp stay), in one
    /// transaction; a file with no row is left alone.
    ///
    /// - Throws: `MetadataError` `.persistence` when the write fails.
    package func replaceValues(
        of attributes: Set<MetadataAttribute>, with updates: [(key: FileKey, values: ImportedValues)]
    ) throws(MetadataError) {
        try connection.withLock { (c) throws(MetadataError) in
            do {
                try c.database.execute("BEGIN IMMEDIATE")
                let write = try c.database.prepare("UPDATE files SET attributes = ?3 WHERE device = ?1 AND inode = ?2")
                for (key, replacement) in updates {
                    let s = c.lookup
                    s.bind(1, Int64(bitPattern: key.device))
                    s.bind(2, Int64(bitPattern: key.inode))
                    guard try s.step() else {
                        s.reset()
                        continue
                    }
                    var reader = ImportWire.Reader(s.bytes(5))
                    var values = ImportWire.readValues(&reader) ?? ImportedValues()
                    s.reset()
                    for attribute in attributes { values[attribute] = replacement[attribute] }
                    var encoded = ImportWire.Writer()
                    ImportWire.appendValues(values, to: &encoded)
                    write.bind(1, Int64(bitPattern: key.device))
                    write.bind(2, Int64(bitPattern: key.inode))
                    write.bind(3, encoded.out)
                    try write.run()
                }
                try c.database.execute("COMMIT")
            } catch {
                try? c.database.execute("ROLLBACK")
                throw MetadataError.persistence("cannot write the import store: \(error)", path: path)
            }
        }
    }

    /// Forgets files (deleted from disk).
    package func remove(_ keys: [FileKey]) throws(MetadataError) {
        try connection.withLock { (c) throws(MetadataError) in
            do {
                try c.database.execute("BEGIN IMMEDIATE")
                var forgotten = 0
                for key in keys {
                    let s = c.deleteFile
                    s.bind(1, Int64(bitPattern: key.device))
                    s.bind(2, Int64(bitPattern: key.inode))
                    let found = try s.step()
                    let id = found ? s.integer(0) : nil
                    let old = found && !s.isNull(1) ? Deflate.decompress(s.bytes(1)) : nil
                    s.reset()
                    if let id, let old {
                        c.deleteText.bind(1, id)
                        c.deleteText.bind(2, text: String(decoding: old, as: UTF8.self))
                        try c.deleteText.run()
                        forgotten += 1
                    }
                }
                try c.count(forgotten: forgotten)
                try c.database.execute("COMMIT")
            } catch {
                try? c.database.execute("ROLLBACK")
                throw MetadataError.persistence("cannot write the import store: \(error)", path: path)
            }
        }
    }

    /// Every stored file's identity and stamp, ordered by `StoredStamp`'s
    /// order (32 bytes a file, no table: a reconcile of ten million files
    /// holds 320 MB, not a dictionary's gigabyte).
    package func sortedStamps() -> [StoredStamp] {
        // The writer's connection (its owner, the indexer, reads this
        // between batches): the reader's serves lookups the engine makes
        // under its lock, which must not wait for a scan of every row.
        connection.withLock { c -> [StoredStamp] in
            guard
                let s = try? c.database.prepare(
                    "SELECT device, inode, modified, size FROM files ORDER BY device, inode")
            else { return [] }
            var stamps: [StoredStamp] = []
            while (try? s.step()) == true {
                stamps.append(
                    StoredStamp(
                        device: s.integer(0), inode: s.integer(1),
                        stamp: FileStamp(modification: s.integer(2), size: UInt64(bitPattern: s.integer(3)))))
            }
            return stamps
        }
    }

    /// A stored file's identity (as the store orders it: signed) and stamp.
    package struct StoredStamp: Sendable {
        var device: Int64
        var inode: Int64
        package var stamp: FileStamp

        package var key: FileKey {
            FileKey(device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode))
        }

        /// Where `key` is in `sorted` (as `sortedStamps` orders it), if it is.
        package static func index(of key: FileKey, in sorted: [StoredStamp]) -> Int? {
            let wanted = (Int64(bitPattern: key.device), Int64(bitPattern: key.inode))
            var low = 0
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                let here = (sorted[middle].device, sorted[middle].inode)
                if here == wanted { return middle }
                if here < wanted { low = middle + 1 } else { high = middle }
            }
            return nil
        }
    }

    /// Files whose text matches an FTS5 query (`invoice`, `inv*`, `a OR b`;
    /// no phrases: the index keeps no positions).
    ///
    /// - Throws: `MetadataError` `.persistence` for a query FTS5 refuses.
    func filesMatching(text query: String) throws(MetadataError) -> [FileKey] {
        try reader.withLock { (c) throws(MetadataError) -> [FileKey] in
            do {
                let s = try c.database.prepare(
                    "SELECT f.device, f.inode FROM content JOIN files f ON f.id = content.rowid WHERE content MATCH ?1")
                s.bind(1, text: query)
                var keys: [FileKey] = []
                while try s.step() {
                    keys.append(
                        FileKey(device: UInt64(bitPattern: s.integer(0)), inode: UInt64(bitPattern: s.integer(1))))
                }
                return keys
            } catch {
                throw MetadataError.persistence("text search failed: \(error)", path: path)
            }
        }
    }

    /// The files that may match a predicate on the text (a superset; see
    /// `TextPrefilter`); nil when the index cannot narrow it (a run of
    /// letters inside more than `vocabularyLimit` distinct words).
    package func candidates(_ filter: TextPrefilter, vocabularyLimit: Int = 4096) -> Set<FileKey>? {
        switch filter {
        case .word(let word, let prefix):
            let quoted = "\"" + String(decoding: word, as: UTF8.self) + "\"" + (prefix ? " *" : "")
            return try? Set(filesMatching(text: quoted))
        case .substring(let run):
            guard let terms = vocabulary(containing: run, limit: vocabularyLimit) else { return nil }
            if terms.isEmpty { return [] }
            let query = terms.map { "\"" + $0 + "\"" }.joined(separator: " OR ")
            return try? Set(filesMatching(text: query))
        case .all(let parts):
            var result: Set<FileKey>?
            for part in parts {
                guard let found = candidates(part, vocabularyLimit: vocabularyLimit) else { continue }
                result = result.map { $0.intersection(found) } ?? found
                if result?.isEmpty == true { break }
            }
            return result
        case .any(let parts):
            var result = Set<FileKey>()
            for part in parts {
                guard let found = candidates(part, vocabularyLimit: vocabularyLimit) else { return nil }
                result.formUnion(found)
            }
            return result
        }
    }

    /// Files whose text is not all ASCII: the full-text index's words and
    /// folding are exactly `[w]`'s for the others.
    package func filesWithNonASCIIText() -> Set<FileKey> {
        reader.withLock { c -> Set<FileKey> in
            guard let s = try? c.database.prepare("SELECT device, inode FROM files WHERE ascii = 0") else { return [] }
            var keys = Set<FileKey>()
            while (try? s.step()) == true {
                keys.insert(FileKey(device: UInt64(bitPattern: s.integer(0)), inode: UInt64(bitPattern: s.integer(1))))
            }
            return keys
        }
    }

    /// The indexed words holding `run` (lower-case ASCII letters and
    /// digits), and maybe words no text holds any more; nil past `limit` of
    /// them. A run of three letters or more is looked up by its trigrams; a
    /// shorter one reads the words.
    func vocabulary(containing run: [UInt8], limit: Int) -> [String]? {
        reader.withLock { c -> [String]? in
            let s = run.count >= 3 ? c.wordsHolding : c.shortWordsHolding
            defer { s.reset() }
            let text = String(decoding: run, as: UTF8.self)
            s.bind(1, text: run.count >= 3 ? "%" + text + "%" : text)
            s.bind(2, Int64(limit + 1))
            var terms: [String] = []
            while (try? s.step()) == true { terms.append(s.text(0)) }
            return terms.count > limit ? nil : terms
        }
    }

    /// Moves the write-ahead log into the database and truncates it (the
    /// indexer calls it when importing has caught up, so the store on disk
    /// is its size, not its size plus a log of the last imports); first
    /// prunes the words no text holds, once a quarter of the stored texts
    /// (at least 1,024) were replaced or removed since the last pruning.
    package func checkpoint() {
        connection.withLock { c in
            if let forgotten = c.integer("SELECT value FROM counters WHERE name = 'forgotten texts'"),
                forgotten >= 1024, forgotten * 4 >= c.integer("SELECT count(*) FROM files") ?? 0
            {
                c.pruneWords()
            }
            _ = try? c.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Takes out of `words` those no stored text holds now (a read of
    /// the whole vocabulary: `checkpoint` calls it when enough went).
    func pruneWords() {
        connection.withLock { $0.pruneWords() }
    }

    /// Words in `words`, stale ones included (tests).
    var wordCount: Int {
        connection.withLock { $0.integer("SELECT count(*) FROM words") ?? 0 }
    }

    /// Stored files.
    package var count: Int {
        connection.withLock { $0.integer("SELECT count(*) FROM files") ?? 0 }
    }
}

extension ImportStore.Connection {
    /// Adds `terms` to `words`, each with its key, those already there left
    /// alone.
    func addWords(_ terms: Set<[UInt8]>) throws(SQLiteDatabase.Failure) {
        for term in terms {
            addWord.bind(1, text: String(decoding: term, as: UTF8.self))
            addWord.bind(2, text: String(decoding: keys.key(of: term), as: UTF8.self))
            try addWord.run()
        }
    }

    /// Adds `forgotten` texts replaced or removed to the count that decides
    /// when words are pruned (in the caller's transaction).
    func count(forgotten: Int) throws(SQLiteDatabase.Failure) {
        guard forgotten > 0 else { return }
        countForgotten.bind(1, Int64(forgotten))
        try countForgotten.run()
    }

    /// The integer the first row of `sql` starts with; nil when there is
    /// none or the query fails.
    func integer(_ sql: String) -> Int? {
        guard let s = try? database.prepare(sql), (try? s.step()) == true else { return nil }
        return Int(s.integer(0))
    }

    func pruneWords() {
        // Pruned words must be added again when a text brings them back.
        knownWords = KnownWords()
        do {
            try database.execute(
                """
                BEGIN IMMEDIATE;
                DELETE FROM words WHERE term NOT IN (SELECT term FROM content_vocabulary);
                UPDATE counters SET value = 0 WHERE name = 'forgotten texts';
                COMMIT;
                """)
        } catch {
            _ = try? database.execute("ROLLBACK")
        }
    }
}

/// Words known to be in the store's `words` table, as many as fit in a
/// fixed table (64 Ki slots, about 2 MB): the common words of every text
/// are found here, and only the others are looked up in SQLite. A slot
/// holds the whole word, so a word is never taken for another; a word
/// pushed out is only looked up again.
struct KnownWords {
    private var slots = [[UInt8]?](repeating: nil, count: 1 << 16)

    private static func slot(of word: UnsafeRawBufferPointer) -> Int {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in word {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
        }
        return Int(truncatingIfNeeded: hash >> 48)
    }

    func contains(_ word: UnsafeRawBufferPointer) -> Bool {
        guard let known = slots[Self.slot(of: word)], known.count == word.count else { return false }
        return known.withUnsafeBytes { $0.elementsEqual(word) }
    }

    mutating func insert(_ word: [UInt8]) {
        word.withUnsafeBytes { slots[Self.slot(of: $0)] = word }
    }
}
