package import MDQSystem

/// The parsed form of a predicate: what the parser and the builder make
/// and the compiler turns into matchers.
package indirect enum PredicateNode: Sendable, Hashable {
    case constant(Bool)
    case comparison(Comparison)
    case not(PredicateNode)
    case and([PredicateNode])
    case or([PredicateNode])
}

/// `[quantifier] attribute op[options] value`.
package struct Comparison: Sendable, Hashable {
    package var attribute: MetadataAttribute
    package var op: ComparisonOperator
    package var options: StringCompareOptions
    package var value: PredicateValue
    /// `ANY`/`SOME`, `ALL`, `NONE` before the key; nil when none is written.
    package var quantifier: Quantifier? = nil
}

/// An aggregate operator before a key. On a list attribute
/// (`kMDItemContentTypeTree`) it says how many elements the comparison must
/// hold for; on a single value, `ANY` and `ALL` are the plain comparison
/// and `NONE` its negation.
package enum Quantifier: String, Sendable, Hashable, CaseIterable {
    /// `ANY` or `SOME`: at least one element.
    case anyElement = "ANY"
    /// `ALL`: every element.
    case everyElement = "ALL"
    /// `NONE`: no element.
    case noElement = "NONE"
}

/// The comparison operators.
package enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case like = "LIKE"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case matches = "MATCHES"
    case between = "BETWEEN"
    case `in` = "IN"
    /// `kMDItemContentType UTI-CONFORMS-TO 'public.image'`: the type is, or
    /// conforms to, the given type.
    case utiConformsTo = "UTI-CONFORMS-TO"
    /// `kMDItemContentType UTI-EQUALS 'public.png'`: the type is the given type.
    case utiEquals = "UTI-EQUALS"
}

/// A literal on the right of a comparison.
package enum PredicateValue: Sendable, Hashable {
    /// Raw bytes: a string literal may carry bytes that are not UTF-8
    /// (`\xHH` escapes, or raw bytes in the query), to match such names.
    case string([UInt8])
    case number(Double)
    case date(Timestamp)
    case bool(Bool)
    case null
    case list([PredicateValue])
}

extension PredicateNode {
    /// The predicate in `NSPredicate` format syntax; parsing it gives back an
    /// equal node.
    package var format: String {
        switch self {
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let c):
            let quantifier = c.quantifier.map { $0.rawValue + " " } ?? ""
            return "\(quantifier)\(c.attribute.rawValue) \(c.op.rawValue)\(c.options.formatSuffix) \(c.value.format)"
        case .not(let inner):
            // Parentheses only around AND and OR: `NOT NOT a == 1` nests as
            // deep as the `!!a == 1` it came from, so any query the parser
            // accepts prints as one it accepts (its depth is bounded).
            switch inner {
            case .and, .or: return "NOT (\(inner.format))"
            case .not, .comparison, .constant: return "NOT \(inner.format)"
            }
        case .and(let parts):
            return parts.map { "(\($0.format))" }.joined(separator: " AND ")
        case .or(let parts):
            return parts.map { "(\($0.format))" }.joined(separator: " OR ")
        }
    }
}

extension PredicateValue {
    /// Seconds between the Unix epoch and Apple's reference date (2001-01-01).
    static let referenceDateOffset: Double = 978_307_200

    package var format: String {
        switch self {
        case .string(let bytes):
            var text = "\""
            var decoder = UTF8ByteDecoder(bytes)
            while let unit = decoder.next() {
                switch unit {
                case .scalar(let scalar):
                    switch scalar {
                    case "\"": text += "\\\""
                    case "\\": text += "\\\\"
                    case "\n": text += "\\n"
                    case "\t": text += "\\t"
                    case "\r": text += "\\r"
                    default:
                        if scalar.value < 0x20 || scalar.value == 0x7F {
                            text += "\\u" + hex(scalar.value, width: 4)
                        } else {
                            text.unicodeScalars.append(scalar)
                        }
                    }
                case .invalid(let byte):
                    // `\xHH` names the character U+00HH, so a byte that is
                    // not UTF-8 takes mdq's own `\yHH` (see `PredicateLexer`).
                    text += "\\y" + hex(UInt32(byte), width: 2)
                }
            }
            return text + "\""
        case .number(let value):
            return Self.formatNumber(value)
        case .date(let time):
            let seconds = Double(time.nanosecondsSinceEpoch) / 1e9 - Self.referenceDateOffset
            return "CAST(\(Self.formatNumber(seconds)), \"NSDate\")"
        case .bool(let value):
            return value ? "YES" : "NO"
        case .null:
            return "nil"
        case .list(let values):
            return "{" + values.map(\.format).joined(separator: ", ") + "}"
        }
    }

    /// Integers without a fraction; others with enough digits to parse back
    /// to the same `Double`.
    static func formatNumber(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    private func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
