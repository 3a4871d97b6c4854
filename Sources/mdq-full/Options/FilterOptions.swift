import ArgumentParser
import Foundation
import MDQEngine
import MetadataIndex

/// fd's filters, for fd users: sizes and modification times, added to the
/// query with AND.
struct FilterOptions: ParsableArguments {
    @Option(
        name: .customLong("size"),
        help: ArgumentHelp(
            "Only files of this size: +N at least, -N at most, N exactly, with fd's units (k, m, g, t: powers of "
                + "1000; ki, mi, gi, ti: of 1024; b: bytes); repeatable (all must hold).", valueName: "[+|-]N[unit]"))
    var sizes: [String] = []

    @Option(
        name: .customLong("changed-within"),
        help: ArgumentHelp(
            "Only entries modified within this long (30s, 10min, 2h, 3d, 1w, 6mon, 1y) or since this date "
                + "(2024-01-31, local time).", valueName: "duration|date"))
    var changedWithin: String?

    @Option(
        name: .customLong("changed-before"),
        help: ArgumentHelp(
            "Only entries modified longer ago than this (as --changed-within) or before this date.",
            valueName: "duration|date"))
    var changedBefore: String?

    var isEmpty: Bool { sizes.isEmpty && changedWithin == nil && changedBefore == nil }

    /// The filters as one predicate; nil when none is given.
    ///
    /// - Throws: `ValidationError` naming a value that is not a size, a
    ///   duration or a date.
    func predicate(now: Date = Date()) throws -> MetadataPredicate? {
        var parts: [MetadataPredicate] = []
        for text in sizes {
            var body = Substring(text)
            let sign = body.first
            if sign == "+" || sign == "-" { body = body.dropFirst() }
            guard let bytes = SizeUnit.bytes(Array(body.utf8)), bytes.isFinite, bytes < 9e18 else {
                throw ValidationError("--size takes [+|-]N[unit] (+10M, -500k, 4ki), not '\(text)'")
            }
            let value = Int64(bytes.rounded())
            switch sign {
            case "+": parts.append(.size(atLeast: value))
            case "-": parts.append(.size(atMost: value))
            default: parts.append(.size(equalTo: value))
            }
        }
        if let text = changedWithin {
            parts.append(.modified(after: try Self.date(text, option: "--changed-within", now: now)))
        }
        if let text = changedBefore {
            parts.append(.modified(before: try Self.date(text, option: "--changed-before", now: now)))
        }
        guard var combined = parts.first else { return nil }
        for part in parts.dropFirst() { combined = combined && part }
        return combined
    }

    /// A duration back from `now`, or a date (`YYYY-MM-DD`, optionally with
    /// ` HH:MM[:SS]`, in local time).
    static func date(_ text: String, option: String, now: Date) throws -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        if let amount = Double(digits), let seconds = units[unit], amount.isFinite {
            return now.addingTimeInterval(-amount * seconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        for format in ["yyyy-MM-dd", "yyyy-MM-dd HH:mm", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        throw ValidationError(
            "\(option) takes a duration (30s, 10min, 2h, 3d, 1w, 6mon, 1y) or a date (2024-01-31), not '\(text)'")
    }

    private static let units: [String: Double] = {
        var table: [String: Double] = [:]
        let spellings: [([String], Double)] = [
            (["s", "sec", "secs", "second", "seconds"], 1), (["m", "min", "mins", "minute", "minutes"], 60),
            (["h", "hr", "hrs", "hour", "hours"], 3600), (["d", "day", "days"], 86_400),
            (["w", "week", "weeks"], 7 * 86_400), (["mon", "month", "months"], 30 * 86_400),
            (["y", "year", "years"], 365 * 86_400),
        ]
        for (names, seconds) in spellings { for name in names { table[name] = seconds } }
        return table
    }()
}
