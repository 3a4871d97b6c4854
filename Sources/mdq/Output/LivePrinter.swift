import Foundation
import MetadataIndex

/// Prints a live query's notifications: the results once gathered, then one
/// line per change (`+`, `-`, `~` and the path), or one JSON object per
/// notification, or each new count.
final class LivePrinter: @unchecked Sendable {
    enum Mode {
        case lines(terminator: UInt8)
        case json
        case count
    }

    // Notifications arrive one at a time on the query's serial queue;
    // `lock` also orders the final flush on interrupt.
    private let lock = NSLock()
    private let mode: Mode
    private let showProgress: Bool
    /// `--attr` keys: columns after the path, or an `attributes` object.
    private let attributes: [String]
    private var progressShown = false

    init(mode: Mode, attributes: [String] = [], showProgress: Bool) {
        self.mode = mode
        self.attributes = attributes
        self.showProgress = showProgress
    }

    /// A JSON array of items with their `--attr` attributes.
    private func appendJSON(_ items: [MetadataItem], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            AttributeText.appendJSON(item, attributes: attributes, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    func didStart() {
        if case .json = mode { write(Array("{\"event\":\"didStartGathering\"}\n".utf8)) }
    }

    func progress(_ gathered: Int) {
        if case .json = mode {
            write(Array("{\"event\":\"gatheringProgress\",\"gathered\":\(gathered)}\n".utf8))
        }
        if showProgress {
            lock.withLock { progressShown = true }
            Diagnostics.status("gathering… \(gathered) items")
        }
    }

    func didFinish(_ results: [MetadataItem]) {
        if lock.withLock({ progressShown }) { Diagnostics.status(nil) }
        var out: [UInt8] = []
        switch mode {
        case .lines(let terminator):
            for item in results {
                AttributeText.appendLine(item, attributes: attributes, to: &out)
                out.append(terminator)
            }
        case .json:
            out += Array("{\"event\":\"didFinishGathering\",\"count\":\(results.count),\"results\":".utf8)
            appendJSON(results, to: &out)
            out += Array("}\n".utf8)
        case .count:
            out += Array("\(results.count)\n".utf8)
        }
        write(out)
    }

    func didUpdate(added: [MetadataItem], changed: [MetadataItem], removed: [MetadataItem], count: Int) {
        var out: [UInt8] = []
        switch mode {
        case .lines(let terminator):
            for (mark, items) in [
                (UInt8(ascii: "-"), removed), (UInt8(ascii: "~"), changed), (UInt8(ascii: "+"), added),
            ] {
                for item in items {
                    out += [mark, UInt8(ascii: " ")]
                    AttributeText.appendLine(item, attributes: attributes, to: &out)
                    out.append(terminator)
                }
            }
        case .json:
            out += Array("{\"event\":\"didUpdate\",\"added\":".utf8)
            appendJSON(added, to: &out)
            out += Array(",\"changed\":".utf8)
            appendJSON(changed, to: &out)
            out += Array(",\"removed\":".utf8)
            appendJSON(removed, to: &out)
            out += Array("}\n".utf8)
        case .count:
            out += Array("\(count)\n".utf8)
        }
        write(out)
    }

    /// Writes whole lines at once, so an interrupt never leaves half a line.
    private func write(_ bytes: [UInt8]) {
        lock.lock()
        defer { lock.unlock() }
        StandardOutput.write(bytes)
    }

    /// Waits for a write in progress, then holds the lock so none starts.
    func quiesce() {
        lock.lock()
    }
}
