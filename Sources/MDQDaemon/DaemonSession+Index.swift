import MDQCore
import MDQSystem
import MDQWire
import SystemPackage

extension DaemonSession {
    /// `index.list`: the indexed scopes.
    func indexList(id: [UInt8]) -> Bool {
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.key("scopes")
        DaemonProtocol.write(daemon.scopeList, namesOnly: daemon.namesOnlyScopes, to: &out)
        out.raw("}\n")
        return send(out.bytes)
    }

    /// `index.add`: indexes a scope, crawled before the answer: with
    /// `"wait":"names"`, answered once its names are (its files' sizes and
    /// dates are read next, `"filling":true`); by default once everything is.
    func indexAdd(_ request: JSONValue, id: [UInt8]) throws(ProtocolError) -> Bool {
        guard let value = request["scope"] else {
            throw ProtocolError(code: .badRequest, message: "index.add needs a \"scope\"")
        }
        let scope = try DaemonProtocol.scope(value)
        let namesOnly: Bool
        switch request["wait"]?.string {
        case nil, "all": namesOnly = false
        case "names": namesOnly = true
        case let other?:
            throw ProtocolError(
                code: .badRequest, message: "index.add waits for \"names\" or \"all\", not \"\(other)\"")
        }
        do {
            try daemon.addScope(scope, content: value["content"]?.bool ?? true)
        } catch {
            throw ProtocolError(code: .scope, message: error.description)
        }
        if !namesOnly { daemon.engine.waitUntilFilled() }
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"added\":")
        DaemonProtocol.write(scope, to: &out)
        out.raw(",\"entries\":")
        out.integer(daemon.engine.entryCount)
        out.raw(",\"filling\":")
        out.bool(daemon.engine.isFilling)
        out.raw("}\n")
        return send(out.bytes)
    }

    /// `index.remove`: stops indexing the scopes at a path.
    func indexRemove(_ request: JSONValue, id: [UInt8]) throws(ProtocolError) -> Bool {
        guard let path = request.bytesField("path"), path.first == 0x2F else {
            throw ProtocolError(code: .badRequest, message: "index.remove needs an absolute \"path\"")
        }
        let removed: Int
        do {
            removed = try daemon.removeScopes(at: FilePath.fromBytes(path))
        } catch {
            throw ProtocolError(code: .scope, message: error.description)
        }
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"removed\":")
        out.integer(removed)
        out.raw("}\n")
        return send(out.bytes)
    }
}
