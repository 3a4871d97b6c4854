import MDQSystem
import MDQWire

extension DaemonSession {
    /// `hello`: the protocol version, the daemon's pid, and what it does
    /// beyond the version (`DaemonProtocol.features`).
    func hello(id: [UInt8]) -> Bool {
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"protocol\":")
        out.integer(DaemonProtocol.version)
        out.raw(",\"pid\":")
        out.integer(ProcessIdentity.processID)
        out.raw(",\"features\":[")
        for (i, feature) in DaemonProtocol.features.enumerated() {
            if i > 0 { out.raw(",") }
            out.string(feature)
        }
        out.raw("]}\n")
        return send(out.bytes)
    }

    /// `status`: what the daemon holds and does (`IndexDaemon.status`).
    func status(id: [UInt8]) -> Bool {
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"status\":{")
        daemon.status(into: &out, for: viewer)
        out.raw("}}\n")
        return send(out.bytes)
    }

    /// `stop`: answered, then the daemon stops (on a thread of its own:
    /// stopping ends this session too).
    func stop(id: [UInt8]) -> Bool {
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"stopping\":true}\n")
        send(out.bytes)
        let daemon = self.daemon
        WorkerThreads.detach(name: "mdq-stop") { daemon.stop() }
        return false
    }
}
