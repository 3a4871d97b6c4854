import CLibPQ
import Glibc
import MDQSystem

/// What went wrong talking to the shared index's database: libpq's or the
/// server's message, with the server's SQLSTATE code when it sent one.
package struct SharedIndexError: Error, CustomStringConvertible, Equatable {
    package var message: String
    /// The server's five-character SQLSTATE (`42P01`, …), when it sent one.
    package var sqlState: String?
    /// The database could not be reached, or the connection to it was
    /// lost: trouble that passes, not an answer about the search.
    package var unreachable = false
    /// No connection was made (libpq's reason, which may name the
    /// connecting user's files and role, is the message).
    package var connecting = false

    /// What the system index tells a user of its connection that failed:
    /// libpq's reason goes to its log, not to its users.
    package static let systemIndexCannotConnect =
        "the system index cannot connect to the shared index (its log says why)"

    package init(_ message: String, sqlState: String? = nil) {
        self.message = message
        self.sqlState = sqlState
    }

    package var description: String { message }

    /// The message for people, said to be the shared index's unless it
    /// says so itself ("cannot connect to the shared index: …").
    package var said: String { Self.said(message) }

    /// `message`, said to be the shared index's unless it says so itself.
    package static func said(_ message: String) -> String {
        message.contains("the shared index") ? message : "the shared index: " + message
    }
}

/// The rows of a statement's result, every value as PostgreSQL's text form
/// (nil for NULL).
package struct PostgresRows {
    package var columns: [String]
    package var rows: [[String?]]

    /// The first row's value of `column`, or nil (no row, NULL, no such column).
    package func first(_ column: String) -> String? {
        guard let index = columns.firstIndex(of: column), let row = rows.first else { return nil }
        return row[index]
    }
}

/// One connection to a PostgreSQL server through libpq: statements with
/// text parameters, transactions. Used by one thread at a time.
///
/// libpq is PostgreSQL's own client library: it speaks every
/// authentication method and TLS mode the server does and reads the
/// standard `postgresql://` URL, `~/.pgpass` and `PG*` variables, so a
/// deployment configures mdq as it configures `psql`.
package final class PostgresConnection {
    private let handle: OpaquePointer
    /// Set by its canceller: the statement running then is cancelled by
    /// the server, and every later one is refused here (a cancel that
    /// reaches the server between two statements does nothing there).
    private let cancelled = Locked(false)

    /// Connects to `url` (a `postgresql://` URL or a libpq keyword string).
    ///
    /// - Throws: `SharedIndexError` with libpq's reason (no server, refused
    ///   password, no such database); the URL is not repeated (it may hold
    ///   a password).
    package init(url: String) throws(SharedIndexError) {
        // A URL libpq cannot parse is refused before it is used: libpq's
        // message would quote the part it could not read, which may be
        // the password.
        var parseError: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &parseError) else {
            if let parseError { PQfreemem(parseError) }
            var error = SharedIndexError(
                "cannot connect to the shared index: the URL is malformed (expected "
                    + "postgresql://USER@HOST:PORT/DATABASE, with '%' and other special characters percent-encoded)")
            error.connecting = true
            throw error
        }
        PQconninfoFree(options)
        // Bounds on a database that does not answer, which the URL may set
        // otherwise (it comes after them): a connection attempt gives up
        // after 10 s, and a connection whose peer went away is found dead
        // within a minute instead of the kernel's quarter of an hour.
        let settings = [
            ("connect_timeout", "10"), ("keepalives", "1"), ("keepalives_idle", "30"),
            ("keepalives_interval", "10"), ("keepalives_count", "3"), ("tcp_user_timeout", "60000"), ("dbname", url),
        ]
        let keywords = settings.map { strdup($0.0) } + [nil]
        let values = settings.map { strdup($0.1) } + [nil]
        defer { (keywords + values).forEach { free($0) } }
        let started = ContinuousClock.now
        let connected = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keys in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { vals in
                PQconnectdbParams(keys.baseAddress, vals.baseAddress, 1)
            }
        }
        guard let handle = connected else { throw SharedIndexError("out of memory connecting") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = Self.trimmed(PQerrorMessage(handle))
            PQfinish(handle)
            var error = SharedIndexError("cannot connect to the shared index: \(reason)")
            error.connecting = true
            // Away (no answer within the attempt's time, nothing listening,
            // a server starting or stopping), as against a server that
            // answered and turned this login away (a password, a role, a
            // database): the one passes, the other is said until mended.
            if ContinuousClock.now - started >= .seconds(5) {
                error.unreachable = true
            } else {
                let ping = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keys in
                    values.map { UnsafePointer($0) }.withUnsafeBufferPointer { vals in
                        PQpingParams(keys.baseAddress, vals.baseAddress, 1)
                    }
                }
                error.unreachable = ping == PQPING_NO_RESPONSE || ping == PQPING_REJECT
            }
            throw error
        }
        self.handle = handle
        mdq_pq_silence_notices(handle)
        // Swift's strings are UTF-8 both ways, whatever PGCLIENTENCODING says.
        guard PQsetClientEncoding(handle, "UTF8") == 0 else {
            let reason = Self.trimmed(PQerrorMessage(handle))
            PQfinish(handle)
            throw SharedIndexError("cannot talk UTF-8 with the shared index: \(reason)")
        }
    }

    deinit { PQfinish(handle) }

    /// Whether `url` holds a password (nil when libpq cannot parse it).
    package static func holdsPassword(_ url: String) -> Bool? {
        guard let options = PQconninfoParse(url, nil) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val, value.pointee != 0 {
                return true
            }
            option += 1
        }
        return false
    }

    /// The role this connection logged in as.
    package var user: String { PQuser(handle).map { String(cString: $0) } ?? "?" }

    /// The server's version as a number (150018 for 15.18).
    package var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Runs `sql` with `parameters` ($1, $2, … as text; nil is NULL) and
    /// returns its rows. Without parameters `sql` may hold several
    /// statements (DDL), and the last one's rows are returned.
    package func execute(_ sql: String, _ parameters: [String?] = []) throws(SharedIndexError) -> PostgresRows {
        try refuseIfCancelled()
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexec(handle, sql)
        } else {
            result = Self.withCStrings(parameters) { values in
                PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
            }
        }
        guard let result else { throw lost(SharedIndexError(Self.trimmed(PQerrorMessage(handle)))) }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            break
        default:
            throw lost(Self.error(of: result))
        }
        let columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var rows: [[String?]] = []
        for row in 0..<PQntuples(result) {
            rows.append(
                (0..<Int32(columnCount)).map { column in
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
                })
        }
        return PostgresRows(columns: columns, rows: rows)
    }

    /// Runs `sql`, a `COPY … FROM STDIN (FORMAT binary)`, and sends it the
    /// rows `fill` writes (`CopyBinary`; the stream's header and trailer are
    /// added here), a part at a time: `fill` is called until it returns
    /// false, and each part is sent as it is made, so a whole index is
    /// streamed in bounded memory.
    ///
    /// - Returns: the rows the server took.
    @discardableResult
    package func copy(_ sql: String, _ fill: (inout CopyBinary) throws(SharedIndexError) -> Bool)
        throws(SharedIndexError) -> Int
    {
        guard let started = PQexec(handle, sql) else { throw SharedIndexError(Self.trimmed(PQerrorMessage(handle))) }
        let status = PQresultStatus(started)
        if status != PGRES_COPY_IN {
            defer { PQclear(started) }
            throw Self.error(of: started)
        }
        PQclear(started)
        var text = CopyBinary()
        text.bytes = CopyBinary.header
        var failure: SharedIndexError?
        while true {
            let more: Bool
            do {
                more = try fill(&text)
            } catch {
                failure = error
                break
            }
            if !more { text.bytes += CopyBinary.trailer }
            if !text.bytes.isEmpty {
                let sent = text.bytes.withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) {
                        PQputCopyData(handle, $0.baseAddress, Int32($0.count))
                    }
                }
                text.bytes.removeAll(keepingCapacity: true)
                if sent != 1 {
                    failure = SharedIndexError(Self.trimmed(PQerrorMessage(handle)))
                    break
                }
            }
            if !more { break }
        }
        // A failed fill aborts the COPY, which the server then refuses.
        guard PQputCopyEnd(handle, failure == nil ? nil : "mdq stopped the copy") == 1 else {
            throw SharedIndexError(Self.trimmed(PQerrorMessage(handle)))
        }
        var rows = 0
        var serverError: SharedIndexError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_COMMAND_OK {
                rows = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if serverError == nil {
                serverError = Self.error(of: result)
            }
            PQclear(result)
        }
        if let failure { throw failure }
        if let serverError { throw serverError }
        return rows
    }

    /// The notifications (`NOTIFY`) received on channels this connection
    /// listens to, as (channel, payload), without waiting; reading any
    /// input the server sent first.
    package func notifications() throws(SharedIndexError) -> [(channel: String, payload: String)] {
        guard PQconsumeInput(handle) == 1 else { throw SharedIndexError(Self.trimmed(PQerrorMessage(handle))) }
        var received: [(String, String)] = []
        while let notification = PQnotifies(handle) {
            received.append(
                (String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return received
    }

    /// The connection's socket, to wait on for notifications.
    package var socket: Int32 { PQsocket(handle) }

    /// Whether a connection that waits for its next statement, and
    /// listens to nothing, is still open: a server stopped or restarted
    /// since ends its sessions with a message and closes them, which its
    /// next statement would meet (a kept connection is then closed, not
    /// reused).
    package var isOpenWhileIdle: Bool {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        return PQstatus(handle) == CONNECTION_OK && poll(&descriptor, 1, 0) == 0
    }

    /// Whether libpq found the connection lost (the server ended the
    /// session, or went away) at its last statement.
    package var isLost: Bool { PQstatus(handle) != CONNECTION_OK }

    /// What cancels the statement this connection's server runs, from any
    /// thread (nil when libpq cannot make one). Taken while the connection
    /// is idle: libpq's `PQgetCancel` reads it.
    package func canceller() -> PostgresCanceller? {
        PQgetCancel(handle).map { PostgresCanceller($0, flag: cancelled) }
    }

    /// Refuses a statement once cancelled, as the server refuses one.
    private func refuseIfCancelled() throws(SharedIndexError) {
        if cancelled.withLock({ $0 }) {
            throw SharedIndexError("canceling statement due to user request", sqlState: "57014")
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled
    /// back when it throws.
    package func transaction<T>(_ body: () throws(SharedIndexError) -> T) throws(SharedIndexError) -> T {
        _ = try execute("BEGIN")
        do {
            let value = try body()
            _ = try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// `error`, marked unreachable when the connection is gone with it.
    private func lost(_ error: SharedIndexError) -> SharedIndexError {
        var error = error
        if PQstatus(handle) != CONNECTION_OK { error.unreachable = true }
        return error
    }

    private static func error(of result: OpaquePointer) -> SharedIndexError {
        // PG_DIAG_SQLSTATE, a character macro Swift does not import.
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        return SharedIndexError(Self.trimmed(PQresultErrorMessage(result)), sqlState: state)
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        var text = String(cString: message)
        while text.last?.isWhitespace == true { text.removeLast() }
        // libpq starts a server's message with its severity.
        for prefix in ["ERROR:  ", "FATAL:  "] where text.hasPrefix(prefix) { text.removeFirst(prefix.count) }
        // On one line, as every warning is: libpq puts its hints on lines
        // of their own.
        return text.split(whereSeparator: \.isNewline).map { $0.trimmingPrefix(while: \.isWhitespace) }
            .joined(separator: "; ")
    }

    private static func withCStrings<R>(
        _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R
    ) -> R {
        let copies: [UnsafeMutablePointer<CChar>?] = strings.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        let pointers = copies.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// Cancels the statement a connection's server runs (libpq's `PQcancel`,
/// which any thread may call, even while another waits on the
/// connection): the statement fails with SQLSTATE `57014`, as one past its
/// `statement_timeout` does; a connection that runs nothing is left alone,
/// but a request still on its way may cancel its next statement.
package final class PostgresCanceller: @unchecked Sendable {
    private let handle: OpaquePointer
    private let flag: Locked<Bool>

    fileprivate init(_ handle: OpaquePointer, flag: Locked<Bool>) {
        self.handle = handle
        self.flag = flag
    }

    deinit { PQfreeCancel(handle) }

    /// Cancels the statement running, and refuses every later one on the
    /// connection; whether the server was asked.
    @discardableResult
    package func cancel() -> Bool {
        flag.withLock { $0 = true }
        var reason = [CChar](repeating: 0, count: 256)
        return PQcancel(handle, &reason, Int32(reason.count)) == 1
    }
}
