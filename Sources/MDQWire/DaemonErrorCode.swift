/// The codes of the daemon protocol's errors (`{"error":{"code":…}}`,
/// `Documentation/protocol.md#errors`): one vocabulary for the daemon that
/// writes them and every client that reads them (the front, the library).
package enum DaemonErrorCode: String, Sendable, CaseIterable {
    /// Not JSON, a field missing or of the wrong shape.
    case badRequest = "bad-request"
    /// The `command` is none the daemon knows.
    case unknownCommand = "unknown-command"
    /// The predicate does not parse (with the byte `offset`).
    case querySyntax = "query-syntax"
    /// The daemon does not keep what the request covers: the client
    /// searches by itself (`"gap":true`: it keeps the folder but leaves out
    /// what the message names).
    case notCovered = "not-covered"
    /// The request line was too long.
    case tooLarge = "too-large"
    /// The request line was not finished in time.
    case timeout
    /// Another user, or a command this user may not give.
    case forbidden
    /// Past a limit (queries, subscriptions, followers, threads).
    case busy
    /// `index.add` or `index.remove` failed.
    case scope
    /// A client of another protocol version.
    case protocolVersion = "protocol-version"
    /// The query ran past its budget.
    case tooExpensive = "too-expensive"
    /// A well-formed request that names what is not there (a host the
    /// shared index does not know): the user's mistake, which `mdq`
    /// reports as it reports a wrong option.
    case invalidArgument = "invalid-argument"
    /// A folder of a search across hosts that its host would not let the
    /// user search: `path` (`NAME:/path`, as bytes as paths go) and
    /// `errno`, the host's system error (absent when the host does not
    /// index what is in the folder).
    case folder
    /// A client could not read the daemon's answer.
    case badResponse = "bad-response"
    /// A request that does not fit where the session is.
    case badState = "bad-state"

    /// The code an error object carries; nil when it has none this side
    /// knows (a daemon of a later version).
    package init?(of error: JSONValue) {
        guard let text = error["code"]?.string else { return nil }
        self.init(rawValue: text)
    }
}
