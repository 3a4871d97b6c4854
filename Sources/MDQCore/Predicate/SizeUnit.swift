import MDQSystem

/// Size suffixes on numbers, as fd's `--size` takes them: `k`, `m`, `g`,
/// `t` (with or without a final `b`) count in powers of 1000; `ki`, `mi`,
/// `gi`, `ti` (with or without `b`) in powers of 1024; `b` alone is bytes.
/// Any case: `10MB`, `1.5GiB`, `500k`.
package enum SizeUnit {
    /// The multiplier a suffix stands for; nil when it is not one.
    static func multiplier(_ suffix: some Collection<UInt8>) -> Double? {
        let lower = suffix.map { $0 | 0x20 }
        guard !lower.isEmpty, lower.count <= 3 else { return nil }
        if lower == [UInt8(ascii: "b")] { return 1 }
        let powers: [UInt8: Double] = [
            UInt8(ascii: "k"): 1, UInt8(ascii: "m"): 2, UInt8(ascii: "g"): 3, UInt8(ascii: "t"): 4,
        ]
        guard let power = powers[lower[0]] else { return nil }
        var rest = lower.dropFirst()
        var base = 1000.0
        if rest.first == UInt8(ascii: "i") {
            base = 1024
            rest = rest.dropFirst()
        }
        if rest.first == UInt8(ascii: "b") { rest = rest.dropFirst() }
        guard rest.isEmpty else { return nil }
        var value = 1.0
        for _ in 0..<Int(power) { value *= base }
        return value
    }

    /// A number with an optional size suffix (`10MB`, `1.5GiB`, `4096`);
    /// nil when the text is neither.
    package static func bytes(_ text: some Collection<UInt8>) -> Double? {
        let digits = text.prefix { ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ".") }
        guard !digits.isEmpty, let number = Double(String(decoding: digits, as: UTF8.self)) else { return nil }
        let suffix = text.dropFirst(digits.count)
        if suffix.isEmpty { return number }
        return multiplier(suffix).map { number * $0 }
    }
}
