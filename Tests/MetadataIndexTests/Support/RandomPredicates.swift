import TestSupport

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Random predicate trees from the grammar, for round-trip and
/// scan-versus-entry property tests.
struct RandomPredicates {
    /// Pieces string values are built from.
    var stringPieces = ["a", "*", "?", "\\", "'", "\"", "caf\u{E9}", " ", "\n", "x"]
    /// Appends a byte that is not UTF-8 to some strings.
    var invalidBytes = true
    var attributes = MetadataAttribute.all
    var maxDepth = 3
    /// String operators besides `==` and `!=`.
    var stringOperators: [ComparisonOperator] = [.beginsWith, .endsWith, .contains, .in]
    /// One comparison in this many tests `nil` (`== nil`, `!= nil`).
    var nullOneIn = 0

    func value(for attribute: MetadataAttribute, _ random: inout SeededGenerator) -> PredicateValue {
        switch attribute.valueType {
        case .string:
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0..<5, using: &random) {
                bytes += Array(stringPieces.randomElement(using: &random)!.utf8)
            }
            if invalidBytes && Int.random(in: 0..<4, using: &random) == 0 { bytes.append(0xFF) }
            return .string(bytes)
        case .number: return .number(Double(Int.random(in: -5...5_000_000, using: &random)))
        case .date:
            return .date(
                Timestamp(nanosecondsSinceEpoch: Int64.random(in: 0...2_000_000_000, using: &random) * 1_000_000_000))
        case .boolean: return .bool(Bool.random(using: &random))
        }
    }

    func comparison(_ random: inout SeededGenerator) -> PredicateNode {
        let attribute = attributes.randomElement(using: &random)!
        var ops: [ComparisonOperator] = [.equal, .notEqual]
        switch attribute.valueType {
        case .string: ops += stringOperators
        case .number, .date: ops += [.less, .lessOrEqual, .greater, .greaterOrEqual, .between, .in]
        case .boolean: break
        }
        let op = ops.randomElement(using: &random)!
        var v = value(for: attribute, &random)
        if op == .between { v = .list([value(for: attribute, &random), value(for: attribute, &random)]) }
        if op == .in {
            v = .list((0..<Int.random(in: 1...3, using: &random)).map { _ in value(for: attribute, &random) })
        }
        if nullOneIn > 0 && (op == .equal || op == .notEqual) && Int.random(in: 0..<nullOneIn, using: &random) == 0 {
            v = .null
        }
        let options: StringCompareOptions =
            attribute.valueType == .string
            ? StringCompareOptions(rawValue: UInt8.random(in: 0...3, using: &random)) : []
        return .comparison(Comparison(attribute: attribute, op: op, options: options, value: v))
    }

    func node(depth: Int = 0, _ random: inout SeededGenerator) -> PredicateNode {
        if depth >= maxDepth || Int.random(in: 0..<3, using: &random) == 0 {
            return comparison(&random)
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 0: return .not(node(depth: depth + 1, &random))
        case 1: return .and((0..<Int.random(in: 2...3, using: &random)).map { _ in node(depth: depth + 1, &random) })
        case 2: return .or((0..<Int.random(in: 2...3, using: &random)).map { _ in node(depth: depth + 1, &random) })
        default:
            return Int.random(in: 0..<4, using: &random) == 0
                ? .constant(Bool.random(using: &random)) : comparison(&random)
        }
    }
}
