package import MDQWire

/// How every item mdq writes as JSON carries a date: the daemon's protocol
/// (query results, subscriptions) and `--json` alike, one representation
/// (`Documentation/protocol.md#items`):
///
/// - `"modified":"2025-01-31T12:00:00Z"`: ISO 8601 in UTC, to the second,
///   what jq's `fromdateiso8601` and `fromdate` read;
/// - `"modifiedEpoch":1738324800.308604997`: seconds since 1970 with the
///   exact nanoseconds (trailing zeros trimmed), what a program compares
///   and what mdq's own clients read back exactly (`read`).
///
/// `created` and `createdEpoch` are the same for the birth time, and an
/// imported date attribute's value is `{"date":"…","dateEpoch":…}`.
package enum ItemDates {
    /// Which date of an item.
    package enum Field: Sendable {
        case modified, created
        /// An imported attribute's date value.
        case date
    }

    /// Appends `"<field>":"…","<field>Epoch":…` (no comma before).
    package static func append(_ field: Field, _ date: Timestamp, to out: inout [UInt8]) {
        switch field {
        case .modified: appendLiteral("\"modified\":\"", to: &out)
        case .created: appendLiteral("\"created\":\"", to: &out)
        case .date: appendLiteral("\"date\":\"", to: &out)
        }
        TextFormat.appendISO8601(date, fractionalSeconds: false, to: &out)
        switch field {
        case .modified: appendLiteral("\",\"modifiedEpoch\":", to: &out)
        case .created: appendLiteral("\",\"createdEpoch\":", to: &out)
        case .date: appendLiteral("\",\"dateEpoch\":", to: &out)
        }
        TextFormat.appendEpochSeconds(date, to: &out)
    }

    /// The date an item object holds, exactly (from its `…Epoch` field);
    /// nil when it has none.
    package static func read(_ field: Field, from item: JSONValue) -> Timestamp? {
        let epoch =
            switch field {
            case .modified: item["modifiedEpoch"]
            case .created: item["createdEpoch"]
            case .date: item["dateEpoch"]
            }
        return epoch?.exactNanoseconds.map(Timestamp.init(nanosecondsSinceEpoch:))
    }

    private static func appendLiteral(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }
}
