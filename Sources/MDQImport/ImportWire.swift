import MDQCore
import MDQSystem
import SystemPackage

/// The framing between the daemon and its import workers: a worker first
/// says hello (its protocol and its confinement); then a request is a path
/// and limits, with the open file attached as a descriptor (`SCM_RIGHTS`:
/// the worker opens nothing; the path names the file and gives its type by
/// extension), and an answer is an `ImportReport`. Binary,
/// length-prefixed, so names and text need no escaping and a non-UTF-8
/// path passes exactly.
///
/// The parent decodes answers defensively: a worker has just read a file
/// that may be hostile and may itself be compromised, so every length is
/// checked against what is left, unknown keys are dropped, and a malformed
/// answer is an import failure, never a crash.
enum ImportWire {
    /// Bytes an answer may take: the text limit plus room for the rest.
    static func answerLimit(_ limits: ImportLimits) -> Int { limits.textBytes + (1 << 20) }

    // MARK: Hello

    /// What a worker says first: this protocol's name, so a worker of
    /// another version is told apart from a broken one.
    static let protocolName = "mdq-import-worker/2"

    /// A worker's first frame: the protocol and how it is confined, sent
    /// before it reads any file.
    static func hello(_ confinement: WorkerConfinement) -> [UInt8] {
        var out = Writer()
        out.string(protocolName)
        out.integer(Int64(confinement.landlockABI ?? 0))
        out.string(confinement.landlockProblem ?? "")
        out.integer(confinement.seccomp ? 1 : 0)
        out.string(confinement.seccompProblem ?? "")
        return out.framed()
    }

    /// What a hello says: the worker's confinement; nil when malformed or
    /// of another protocol.
    static func decodeHello(_ body: [UInt8]) -> WorkerConfinement? {
        var reader = Reader(body)
        guard reader.string() == protocolName, let abi = reader.integer(), let landlockProblem = reader.string(),
            let seccomp = reader.integer(), let seccompProblem = reader.string(), reader.atEnd, (0...1000).contains(abi)
        else { return nil }
        return WorkerConfinement(
            landlockABI: abi > 0 ? Int(abi) : nil, landlockProblem: landlockProblem.isEmpty ? nil : landlockProblem,
            seccomp: seccomp != 0, seccompProblem: seccompProblem.isEmpty ? nil : seccompProblem)
    }

    // MARK: Requests

    /// A request: the file's path, the limits, and the attributes wanted
    /// (nil: every importer for the file's type runs). The open file goes
    /// with it as a descriptor (`WorkerProcess.send(_:descriptor:)`).
    package static func request(path: FilePath, limits: ImportLimits, wanted: Set<MetadataAttribute>? = nil) -> [UInt8]
    {
        var out = Writer()
        out.integer(Int64(limits.bytesRead))
        out.integer(Int64(limits.textBytes))
        out.integer(Int64(limits.pixels))
        out.bytes(path.bytes)
        out.integer(wanted.map { Int64($0.count) } ?? -1)
        for attribute in (wanted ?? []).sorted(by: { $0.rawValue < $1.rawValue }) { out.string(attribute.rawValue) }
        return out.framed()
    }

    static func decodeRequest(_ body: [UInt8]) -> (FilePath, ImportLimits, Set<MetadataAttribute>?)? {
        var reader = Reader(body)
        guard let bytesRead = reader.integer(), let textBytes = reader.integer(), let pixels = reader.integer(),
            let path = reader.bytes(), let wantedCount = reader.integer(), bytesRead >= 0, textBytes >= 0, pixels >= 0,
            wantedCount <= 1000
        else { return nil }
        var wanted: Set<MetadataAttribute>?
        if wantedCount >= 0 {
            var keys: Set<MetadataAttribute> = []
            for _ in 0..<wantedCount {
                guard let key = reader.string() else { return nil }
                if let attribute = MetadataAttribute.importedByKey[key] { keys.insert(attribute) }
            }
            wanted = keys
        }
        let limits = ImportLimits(bytesRead: Int(bytesRead), textBytes: Int(textBytes), pixels: Int(pixels))
        return (FilePath.fromBytes(path), limits, wanted)
    }

    // MARK: Answers

    package static func answer(_ report: ImportReport) -> [UInt8] {
        var out = Writer()
        out.string(report.typeByName)
        out.string(report.sniffedType ?? "")
        out.string(report.failure?.reason ?? "")
        out.integer(Int64(report.steps.count))
        for step in report.steps {
            out.string(step.importer)
            out.string(step.failure?.reason ?? "")
            let keys = step.values.values.keys.map(\.rawValue).sorted()
            out.integer(Int64(keys.count))
            for key in keys { out.string(key) }
        }
        appendValues(report.values, to: &out)
        return out.framed()
    }

    static func decodeAnswer(_ body: [UInt8], path: FilePath) -> ImportReport? {
        var reader = Reader(body)
        guard let typeByName = reader.string(), let sniffed = reader.string(), let failure = reader.string(),
            let stepCount = reader.count()
        else { return nil }
        var report = ImportReport(path: path, typeByName: typeByName)
        report.sniffedType = sniffed.isEmpty ? nil : sniffed
        report.failure = failure.isEmpty ? nil : ImportFailure(failure)
        var stepKeys: [[String]] = []
        for _ in 0..<stepCount {
            guard let importer = reader.string(), let reason = reader.string(), let keyCount = reader.count()
            else { return nil }
            var keys: [String] = []
            for _ in 0..<keyCount {
                guard let key = reader.string() else { return nil }
                keys.append(key)
            }
            stepKeys.append(keys)
            report.steps.append(
                ImportReport.Step(
                    importer: importer, values: ImportedValues(),
                    failure: reason.isEmpty ? nil : ImportFailure(reason)))
        }
        guard let values = readValues(&reader) else { return nil }
        report.values = values
        guard reader.atEnd else { return nil }
        // Each step's own values, from the merged ones it filled.
        for (i, keys) in stepKeys.enumerated() {
            for attribute in MetadataAttribute.importedAttributes where keys.contains(attribute.rawValue) {
                report.steps[i].values[attribute] = report.values[attribute]
            }
        }
        return report
    }

    // MARK: Values

    /// Appends attribute values: a count, then each key, a type tag and the
    /// value (also the store's encoding of a file's attributes).
    static func appendValues(_ values: ImportedValues, to out: inout Writer) {
        let sorted = values.values.sorted { $0.key.rawValue < $1.key.rawValue }
        out.integer(Int64(sorted.count))
        for (attribute, value) in sorted {
            out.string(attribute.rawValue)
            switch value {
            case .text(let bytes):
                out.tag(1)
                out.bytes(bytes)
            case .integer(let number):
                out.tag(2)
                out.integer(number)
            case .real(let number):
                out.tag(3)
                out.integer(Int64(bitPattern: number.bitPattern))
            case .date(let time):
                out.tag(4)
                out.integer(time.nanosecondsSinceEpoch)
            case .bool(let flag):
                out.tag(5)
                out.integer(flag ? 1 : 0)
            case .list(let strings):
                out.tag(6)
                out.integer(Int64(strings.count))
                for string in strings { out.string(string) }
            case .url(let path, let isFolder):
                out.tag(7)
                out.bytes(path)
                out.integer(isFolder ? 1 : 0)
            }
        }
    }

    /// Values written by `appendValues`; nil when malformed. Keys that are
    /// not imported attributes are dropped.
    static func readValues(_ reader: inout Reader) -> ImportedValues? {
        guard let valueCount = reader.count() else { return nil }
        var values = ImportedValues()
        for _ in 0..<valueCount {
            guard let key = reader.string(), let tag = reader.tag() else { return nil }
            let value: AttributeValue
            switch tag {
            case 1:
                guard let bytes = reader.bytes() else { return nil }
                value = .text(bytes)
            case 2:
                guard let number = reader.integer() else { return nil }
                value = .integer(number)
            case 3:
                guard let bits = reader.integer() else { return nil }
                value = .real(Double(bitPattern: UInt64(bitPattern: bits)))
            case 4:
                guard let time = reader.integer() else { return nil }
                value = .date(Timestamp(nanosecondsSinceEpoch: time))
            case 5:
                guard let flag = reader.integer() else { return nil }
                value = .bool(flag != 0)
            case 6:
                guard let count = reader.count() else { return nil }
                var strings: [String] = []
                for _ in 0..<count {
                    guard let string = reader.string() else { return nil }
                    strings.append(string)
                }
                value = .list(strings)
            case 7:
                guard let bytes = reader.bytes(), let flag = reader.integer() else { return nil }
                value = .url(path: bytes, isFolder: flag != 0)
            default: return nil
            }
            if let attribute = MetadataAttribute.importedByKey[key] { values[attribute] = value }
        }
        return values
    }

    // MARK: Encoding

    struct Writer {
        var out: [UInt8] = []

        mutating func tag(_ value: UInt8) { out.append(value) }

        mutating func integer(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { out += $0 }
        }

        mutating func bytes(_ value: [UInt8]) {
            integer(Int64(value.count))
            out += value
        }

        mutating func string(_ value: String) { bytes(Array(value.utf8)) }

        /// The body behind its length (4 bytes, little-endian).
        func framed() -> [UInt8] {
            var framed: [UInt8] = []
            framed.reserveCapacity(out.count + 4)
            withUnsafeBytes(of: UInt32(out.count).littleEndian) { framed += $0 }
            return framed + out
        }
    }

    struct Reader {
        private let body: [UInt8]
        private var offset = 0

        init(_ body: [UInt8]) { self.body = body }

        var atEnd: Bool { offset == body.count }

        mutating func tag() -> UInt8? {
            guard offset < body.count else { return nil }
            defer { offset += 1 }
            return body[offset]
        }

        mutating func integer() -> Int64? {
            guard body.count - offset >= 8 else { return nil }
            var value: UInt64 = 0
            for i in 0..<8 { value |= UInt64(body[offset + i]) << (8 * UInt64(i)) }
            offset += 8
            return Int64(bitPattern: value)
        }

        /// A count of following items, each at least one byte long.
        mutating func count() -> Int? {
            guard let value = integer(), value >= 0, value <= Int64(body.count - offset) else { return nil }
            return Int(value)
        }

        mutating func bytes() -> [UInt8]? {
            guard let length = count() else { return nil }
            defer { offset += length }
            return Array(body[offset..<offset + length])
        }

        mutating func string() -> String? { bytes().map { String(decoding: $0, as: UTF8.self) } }
    }
}
