import Foundation
import MDQLive
import MetadataIndex

/// Prints a live query's notifications, in one of three forms.
///
/// Text (one record per line, or per NUL with `-0`): the results once
/// gathered, then per update `- path` for each removed item (children
/// first), `~ path` for each item changed in place, a `< old path` line
/// directly followed by a `> new path` line for each item renamed or moved
/// (so a reader can follow it), and `+ path` for each added item (parents
/// first). `--attr` columns follow the path of `~`, `>`, `+` and `-` lines.
///
/// JSON (`--json`, one object per line): `{"event":"didStartGathering"}`,
/// `{"event":"gatheringProgress","gathered":N}`, one
/// `{"event":"result",...item}` line per initial result, then
/// `{"event":"didFinishGathering","count":N}`; per update one
/// `{"event":"didUpdate","added":[...],"changed":[...],"removed":[...]}`
/// line (at most 50,000 items); `{"event":"warning",...}` for each problem,
/// `{"event":"resolved",...}` when one no longer holds.
/// Every item has an `id`, stable for the life of the process; a changed
/// item whose path changed has `previousPath`; a removed item has the path
/// last printed for it.
///
/// Count (`--count`): the number of results once gathered, then each new
/// number when it changes.
///
/// Across hosts (`mdq --live --host`) paths are `NAME:/path`; in JSON the
/// host is a field of its own (`host`) and `path` and `previousPath` are
/// the host's, as a one-shot search across hosts prints them, and `stale`
/// says whether the host was offline when the item was printed. A host
/// going offline is a `warning` with code `host offline` and its `host`;
/// its results are stale until the `resolved` event of the same code and
/// host (in text, a line on stderr each way).
final class LivePrinter: Sendable {
    enum Mode {
        case lines(terminator: UInt8)
        case json
        case count
    }

    /// Notifications arrive one at a time on the query's serial queue; the
    /// lock also orders the final flush on interrupt.
    private struct State {
        var progressShown = false
        /// The count last printed in count mode.
        var lastCount: Int?
        /// Set on interrupt: nothing more is written.
        var closed = false
        /// Hosts offline, whose results are as of their last contact.
        var staleHosts: Set<[UInt8]> = []
    }

    private let state = Locked(State())
    private let mode: Mode
    private let showProgress: Bool
    /// `--attr` keys: columns after the path, or an `attributes` object.
    private let attributes: [String]
    /// Paths are `NAME:/path` (a query across hosts).
    private let acrossHosts: Bool
    /// This host's `NAME:`, which lines leave out (as a one-shot search
    /// across hosts prints this host's paths).
    private let ownPrefix: [UInt8]?
    /// The first results are printed by path (host, then path across
    /// hosts, which come in no order), without a sorted query's cost on
    /// every update.
    private let ordersFirstResults: Bool

    init(
        mode: Mode, attributes: [String] = [], acrossHosts: Bool = false, ownHost: String? = nil,
        ordersFirstResults: Bool = false, showProgress: Bool
    ) {
        self.mode = mode
        self.attributes = attributes
        self.acrossHosts = acrossHosts
        ownPrefix = acrossHosts ? ownHost.map { Array($0.utf8) + [UInt8(ascii: ":")] } : nil
        self.ordersFirstResults = ordersFirstResults
        self.showProgress = showProgress
    }

    private var printsCounts: Bool {
        if case .count = mode { true } else { false }
    }

    func didStart() {
        if case .json = mode { write(Array("{\"event\":\"didStartGathering\"}\n".utf8)) }
    }

    func progress(_ gathered: Int) {
        if case .json = mode {
            write(Array("{\"event\":\"gatheringProgress\",\"gathered\":\(gathered)}\n".utf8))
        }
        if showProgress {
            state.withLock { $0.progressShown = true }
            Diagnostics.status("gathering… \(gathered) items")
        }
    }

    func didFinish(_ results: [MetadataItem]) {
        var results = results
        if ordersFirstResults && !printsCounts {
            // This host first, then the others by name; each by path.
            results.sort { a, b in
                let (first, second) = (isOwn(a.pathBytes), isOwn(b.pathBytes))
                return first != second ? first : a.pathBytes.lexicographicallyPrecedes(b.pathBytes)
            }
        }
        if state.withLock({ $0.progressShown }) { Diagnostics.status(nil) }
        // Problems found while gathering were held back past the first
        // few; once live, each new one is news and prints.
        Diagnostics.summarizeCrawlWarnings()
        Diagnostics.showsEveryWarning.store(true, ordering: .relaxed)
        var out: [UInt8] = []
        switch mode {
        case .lines(let terminator):
            for item in results {
                AttributeText.appendLine(shown(item), attributes: attributes, to: &out)
                out.append(terminator)
                if out.count >= 1 << 16 { write(&out) }
            }
        case .json:
            // One line per result: a reader never holds the whole set in
            // one line.
            for item in results {
                appendItem(item, event: "result", to: &out)
                out.append(0x0A)
                if out.count >= 1 << 16 { write(&out) }
            }
            out += Array("{\"event\":\"didFinishGathering\",\"count\":\(results.count)}\n".utf8)
        case .count:
            state.withLock { $0.lastCount = results.count }
            out += Array("\(results.count)\n".utf8)
        }
        write(&out)
    }

    func didUpdate(_ update: MetadataQuery.Update, count: Int) {
        var out: [UInt8] = []
        switch mode {
        case .lines(let terminator):
            func line(_ mark: UInt8, _ item: MetadataItem) {
                out += [mark, UInt8(ascii: " ")]
                AttributeText.appendLine(shown(item), attributes: attributes, to: &out)
                out.append(terminator)
            }
            for item in update.removed { line(UInt8(ascii: "-"), item) }
            for item in update.changed {
                if let previous = update.previousPathBytes[item.id] {
                    out += [UInt8(ascii: "<"), UInt8(ascii: " ")] + shown(previous)
                    out.append(terminator)
                    line(UInt8(ascii: ">"), item)
                } else {
                    line(UInt8(ascii: "~"), item)
                }
            }
            for item in update.added { line(UInt8(ascii: "+"), item) }
        case .json:
            out += Array("{\"event\":\"didUpdate\",\"added\":".utf8)
            appendArray(update.added, update, to: &out)
            out += Array(",\"changed\":".utf8)
            appendArray(update.changed, update, to: &out)
            out += Array(",\"removed\":".utf8)
            appendArray(update.removed, update, to: &out)
            out += Array("}\n".utf8)
        case .count:
            let changed = state.withLock { state -> Bool in
                defer { state.lastCount = count }
                return state.lastCount != count
            }
            if changed { out += Array("\(count)\n".utf8) }
        }
        write(&out)
    }

    /// A problem: a `warning` event in JSON, a line on stderr otherwise.
    func warn(_ error: MetadataError) {
        if error.code == .hostOffline, let host = error.host {
            state.withLock { _ = $0.staleHosts.insert(Array(host.utf8)) }
        }
        guard case .json = mode else {
            Diagnostics.crawlWarning(error.code.description, error.description)
            return
        }
        writeProblem(error, event: "warning")
    }

    /// A problem that no longer holds: a `resolved` event in JSON; in
    /// text, a note (a host back, or the warning said before that holds no
    /// more).
    func resolve(_ error: MetadataError) {
        if error.code == .hostOffline, let host = error.host {
            state.withLock { _ = $0.staleHosts.remove(Array(host.utf8)) }
        }
        guard case .json = mode else {
            // A host back, or removed from the shared index (its results
            // then gone): either way its results are the shared index's.
            if error.code == .hostOffline, let host = error.host {
                Diagnostics.note("\(host) is no longer offline: its results follow the shared index again")
            } else {
                Diagnostics.note("resolved: \(error.description)")
            }
            return
        }
        writeProblem(error, event: "resolved")
    }

    /// `{"event":EVENT,"code":…,"message":…}` with the problem's path,
    /// error and host.
    private func writeProblem(_ error: MetadataError, event: String) {
        var out = Array("{\"event\":\"\(event)\",\"code\":".utf8)
        JSONLine.appendString(Array(error.code.description.utf8)[...], to: &out)
        out += Array(",\"message\":".utf8)
        JSONLine.appendString(Array(error.message.utf8)[...], to: &out)
        if let path = error.path {
            out += Array(",\"path\":".utf8)
            let bytes = Array(path.string.utf8)
            JSONLine.appendString(bytes[...], to: &out)
        }
        if let underlying = error.underlying {
            out += Array(",\"error\":".utf8)
            JSONLine.appendString(Array(underlying.description.utf8)[...], to: &out)
        }
        if let host = error.host {
            out += Array(",\"host\":".utf8)
            JSONLine.appendString(Array(host.utf8)[...], to: &out)
        }
        out += Array("}\n".utf8)
        write(&out)
    }

    /// A JSON array of items, each with its id (and previous path).
    private func appendArray(_ items: [MetadataItem], _ update: MetadataQuery.Update, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            appendItem(item, previousPath: update.previousPathBytes[item.id], to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// `{"event":...,"id":N,"previousPath":...,` then the item's own fields.
    private func appendItem(
        _ item: MetadataItem, event: String? = nil, previousPath: [UInt8]? = nil, to out: inout [UInt8]
    ) {
        out.append(UInt8(ascii: "{"))
        if let event { out += Array("\"event\":\"\(event)\",".utf8) }
        out += Array("\"id\":\(item.id),".utf8)
        var item = item
        var previousPath = previousPath
        // Another host's item: its URL names the host.
        var urlHost: [UInt8]?
        // A host's name is ASCII without a colon: `NAME:` ends at the first.
        func onHost(_ path: [UInt8]) -> [UInt8] {
            path.firstIndex(of: UInt8(ascii: ":")).map { Array(path[($0 + 1)...]) } ?? path
        }
        if acrossHosts, let colon = item.pathBytes.firstIndex(of: UInt8(ascii: ":")) {
            let host = Array(item.pathBytes[..<colon])
            out += Array("\"host\":".utf8)
            JSONLine.appendString(host[...], to: &out)
            let stale = state.withLock { $0.staleHosts.contains(host) }
            out += Array(",\"stale\":\(stale),".utf8)
            item = MetadataItem(
                serial: item.id, pathBytes: onHost(item.pathBytes), kind: item.kind, metadata: item.metadata)
            previousPath = previousPath.map(onHost)
            if !isOwn(host + [UInt8(ascii: ":")]) { urlHost = host }
        }
        if let previousPath {
            out += Array("\"previousPath\":".utf8)
            if !JSONLine.appendString(previousPath[...], to: &out) {
                out += Array(",\"previousPathBase64\":\"\(Data(previousPath).base64EncodedString())\"".utf8)
            }
            out.append(UInt8(ascii: ","))
        }
        var object: [UInt8] = []
        AttributeText.appendJSON(item, attributes: attributes, host: urlHost, to: &object)
        out += object.dropFirst()
    }

    /// Whether `path` is this host's (`NAME:/path` with this host's name).
    private func isOwn(_ path: [UInt8]) -> Bool {
        ownPrefix.map { path.starts(with: $0) } ?? false
    }

    /// A path as a line shows it: this host's without its `NAME:`.
    private func shown(_ path: [UInt8]) -> [UInt8] {
        guard let ownPrefix, path.starts(with: ownPrefix) else { return path }
        return Array(path[ownPrefix.count...])
    }

    private func shown(_ item: MetadataItem) -> MetadataItem {
        guard isOwn(item.pathBytes) else { return item }
        return MetadataItem(serial: item.id, pathBytes: shown(item.pathBytes), kind: item.kind, metadata: item.metadata)
    }

    /// Writes whole lines at once, so an interrupt never leaves half a line.
    private func write(_ bytes: inout [UInt8]) {
        state.withLock { state in
            if state.closed { bytes.removeAll() } else { StandardOutput.flush(&bytes) }
        }
    }

    private func write(_ bytes: [UInt8]) {
        var bytes = bytes
        write(&bytes)
    }

    /// Waits for a write in progress; none starts afterwards.
    func quiesce() {
        state.withLock { $0.closed = true }
    }
}
