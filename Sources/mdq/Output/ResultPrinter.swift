import Foundation
import MetadataIndex

/// Writes results to stdout in the chosen format, buffered.
///
/// Called one batch at a time (the search serialises its callbacks). A
/// closed stdout (`mdq ... | head -1`) ends the process quietly with status 0.
final class ResultPrinter: @unchecked Sendable {
    enum Format {
        case lines
        case nullTerminated
        case json
    }

    // `buffer` is only touched from one batch callback at a time, then from
    // the main thread after the search returns.
    private var buffer: [UInt8] = []
    private let format: Format

    init(format: Format) {
        self.format = format
        buffer.reserveCapacity(1 << 16)
    }

    func print(_ batch: SearchResultBatch) {
        for i in 0..<batch.count {
            let result = batch[i]
            switch format {
            case .lines:
                buffer.append(contentsOf: result.pathBytes)
                buffer.append(0x0A)
            case .nullTerminated:
                buffer.append(contentsOf: result.pathBytes)
                buffer.append(0)
            case .json:
                JSONLine.append(result, to: &buffer)
            }
            if buffer.count >= 1 << 16 { flush() }
        }
    }

    func printCount(_ count: Int) {
        buffer.append(contentsOf: Array("\(count)\n".utf8))
    }

    func finish() {
        flush()
    }

    private func flush() {
        StandardOutput.flush(&buffer)
    }
}
