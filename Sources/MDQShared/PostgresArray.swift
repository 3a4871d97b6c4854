/// PostgreSQL array literals, the text form in which arrays go as
/// parameters (`$1::bigint[]`) and come back in rows.
package enum PostgresArray {
    /// `{1,2,3}`.
    package static func numbers<T: LosslessStringConvertible & Numeric>(_ values: some Sequence<T>) -> String {
        "{" + values.map { String($0) }.joined(separator: ",") + "}"
    }

    /// `{"a","b\"c"}`: every element quoted, its `\` and `"` escaped.
    package static func strings(_ values: some Sequence<String>) -> String {
        "{"
            + values.map {
                "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                    + "\""
            }.joined(separator: ",") + "}"
    }

    /// The whole numbers in an integer array's text (`{1,2,3}`).
    package static func integers<T: FixedWidthInteger>(_ text: String) -> [T] {
        text.split(whereSeparator: { !$0.isNumber }).compactMap { T($0) }
    }
}
