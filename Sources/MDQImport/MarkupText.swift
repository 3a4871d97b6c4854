import MDQCore
import MDQSystem

/// The readable text of HTML or XML: tags, comments, processing
/// instructions and the contents of `<script>` and `<style>` removed,
/// character references decoded, each tag a word break (so
/// `<p>a</p><p>b</p>` reads "a b", not "ab"); CDATA sections kept as text.
///
/// A forgiving scanner, not a parser: malformed markup (an unclosed tag, a
/// stray `<`) never fails, it only yields less text. Linear in the input.
package enum MarkupText {
    package static func text(of markup: String) -> String {
        let input = Array(markup.unicodeScalars)
        var out = String.UnicodeScalarView()
        out.reserveCapacity(input.count / 2)
        var i = 0
        let count = input.count
        var pendingSpace = false

        func starts(_ literal: String, at index: Int, caseInsensitive: Bool = false) -> Bool {
            var j = index
            for scalar in literal.unicodeScalars {
                guard j < count else { return false }
                let a = input[j]
                let matches =
                    caseInsensitive
                    ? (a.properties.lowercaseMapping == scalar.properties.lowercaseMapping) : a == scalar
                guard matches else { return false }
                j += 1
            }
            return true
        }
        func find(_ literal: String, from index: Int, caseInsensitive: Bool = false) -> Int? {
            var j = index
            while j < count {
                if starts(literal, at: j, caseInsensitive: caseInsensitive) { return j }
                j += 1
            }
            return nil
        }
        func space() {
            if !out.isEmpty { pendingSpace = true }
        }

        while i < count {
            let scalar = input[i]
            if scalar == "<" {
                if starts("<!--", at: i) {
                    i = (find("-->", from: i + 4) ?? count - 3) + 3
                    space()
                    continue
                }
                if starts("<![CDATA[", at: i) {
                    let end = find("]]>", from: i + 9) ?? count
                    if pendingSpace { out.append(" ") }
                    pendingSpace = false
                    out.append(contentsOf: input[(i + 9)..<end])
                    i = min(count, end + 3)
                    continue
                }
                // A tag: `<` followed by a letter, `/`, `!` or `?`.
                guard i + 1 < count, input[i + 1].properties.isAlphabetic || "/!?".unicodeScalars.contains(input[i + 1])
                else {
                    if pendingSpace { out.append(" ") }
                    pendingSpace = false
                    out.append(scalar)
                    i += 1
                    continue
                }
                let raw =
                    starts("<script", at: i, caseInsensitive: true)
                    ? "</script"
                    : starts("<style", at: i, caseInsensitive: true) ? "</style" : nil
                var j = i + 1
                var quote: Unicode.Scalar?
                while j < count {
                    let c = input[j]
                    if let q = quote {
                        if c == q { quote = nil }
                    } else if c == "\"" || c == "'" {
                        quote = c
                    } else if c == ">" {
                        break
                    }
                    j += 1
                }
                i = j + 1
                if let raw, let close = find(raw, from: i, caseInsensitive: true) {
                    i = (find(">", from: close) ?? count - 1) + 1
                }
                space()
                continue
            }
            if scalar == "&", let (decoded, length) = entity(input, at: i) {
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.append(decoded)
                i += length
                continue
            }
            if scalar.properties.isWhitespace {
                space()
            } else {
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.append(scalar)
            }
            i += 1
        }
        return String(out)
    }

    private static let named: [String: Unicode.Scalar] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}", "copy": "\u{A9}",
        "reg": "\u{AE}", "hellip": "\u{2026}", "mdash": "\u{2014}", "ndash": "\u{2013}", "lsquo": "\u{2018}",
        "rsquo": "\u{2019}", "ldquo": "\u{201C}", "rdquo": "\u{201D}", "euro": "\u{20AC}", "eacute": "\u{E9}",
        "egrave": "\u{E8}", "agrave": "\u{E0}", "ccedil": "\u{E7}", "uuml": "\u{FC}", "ouml": "\u{F6}",
        "auml": "\u{E4}", "szlig": "\u{DF}",
    ]

    /// A character reference at `index` (`&amp;`, `&#233;`, `&#xE9;`):
    /// the character and the reference's length, or nil.
    private static func entity(_ input: [Unicode.Scalar], at index: Int) -> (Unicode.Scalar, Int)? {
        var j = index + 1
        var name = ""
        while j < input.count, j - index <= 32, input[j] != ";" {
            name.unicodeScalars.append(input[j])
            j += 1
        }
        guard j < input.count, input[j] == ";", !name.isEmpty else { return nil }
        let length = j - index + 1
        if name.hasPrefix("#") {
            let digits = name.dropFirst()
            let value =
                digits.first == "x" || digits.first == "X"
                ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            guard let value, let scalar = Unicode.Scalar(value), value != 0 else { return nil }
            return (scalar, length)
        }
        return named[name].map { ($0, length) }
    }
}
