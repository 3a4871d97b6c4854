import Foundation
import MDQCore
import MDQEngine
import MDQLive
import MDQSystem
import MDQWire
import SystemPackage

extension DaemonSession {
    /// `follow`: the changes the engine applies in a folder it keeps live,
    /// in the watcher seam's vocabulary, each folder by its file handle and
    /// path (`EventFollower`, `FollowWire`), until the client goes away. Another daemon follows this one so (a user's daemon
    /// following the system index: `SystemIndexFeed`) instead of watching
    /// the folders itself.
    /// Only a folder the index lists, on the filesystem of its root.
    func follow(
        _ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor], reader: inout LineReader
    ) throws(ProtocolError) -> Bool {
        guard let value = request["scope"] else {
            throw ProtocolError(code: .badRequest, message: "follow needs a \"scope\"")
        }
        let scope = try DaemonProtocol.scope(value)
        let path = scope.path
        // A user follows a folder they opened (`reachedScope`).
        let opened = try viewer == nil ? nil : reachedScope(scope, value, descriptors)
        let engine = daemon.engine
        let whole = ScopeRequest(path: path, rules: ScopeRules(includeHidden: true, stayOnFileSystem: true))
        guard engine.covers(whole) || engine.covers(ScopeRequest(path: path, rules: ScopeRules(includeHidden: true)))
        else {
            throw ProtocolError(code: .notCovered, message: "\(path.string) is not kept live here")
        }
        // A filesystem mounted there is another one: nothing would be told.
        guard let device = engine.rootDevice(holding: path),
            case .success(let status) = opened.map(Result.success) ?? FileStatus.of(pathBytes: path.bytes),
            status.device == device
        else {
            throw ProtocolError(code: .notCovered, message: "\(path.string) is on another filesystem")
        }
        guard engine.followsByHandle(path) else {
            throw ProtocolError(code: .notCovered, message: "\(path.string) is watched folder by folder here")
        }
        var asker = viewer
        asker?.reachedScopes = true
        let follower = EventFollower(scope: path.bytes, device: device, viewer: asker)
        // Each follower costs the engine a check per event it applies.
        guard daemon.begin(.follower, for: user) else {
            throw ProtocolError(
                code: .busy,
                message: "too many followers: this daemon tells \(daemon.limits.followersPerUser) folders per user, "
                    + "\(daemon.limits.followersInAll) in all")
        }
        defer { daemon.end(.follower, for: user) }
        guard case .success = engine.follow(follower) else {
            throw ProtocolError(code: .notCovered, message: "\(path.string) is not kept live here")
        }
        defer { engine.unfollow(follower) }
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"event\":\"following\"}\n")
        guard send(out.bytes) else { return false }
        guard
            WorkerThreads.start(
                name: "mdq-follower",
                { [socket] in
                    while true {
                        var line = JSONWriter(capacity: 4096)
                        switch follower.next() {
                        case .closed:
                            // Ended by the engine (its folder moved or left)
                            // or by the session: the client learns it.
                            socket.shutdown()
                            return
                        case .overflow:
                            line.raw("{\"event\":\"overflow\"}\n")
                        case .events(let events):
                            line.raw("{\"event\":\"events\",\"events\":[")
                            for (i, event) in events.enumerated() {
                                if i > 0 { line.raw(",") }
                                FollowWire.write(event, to: &line)
                            }
                            line.raw("]}\n")
                        }
                        guard case .success = withBytes(of: line.bytes, { socket.write($0) }) else {
                            follower.close()
                            socket.shutdown()
                            return
                        }
                    }
                }) != nil
        else {
            throw ProtocolError(code: .busy, message: "the daemon cannot take more followers")
        }
        // Nothing more is read; the stream ends with the connection.
        while true {
            switch reader.next(idle: -1) {
            case .end, .failure: return false
            case .line: continue
            }
        }
    }
}
