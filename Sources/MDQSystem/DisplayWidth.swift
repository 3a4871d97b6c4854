/// How many terminal columns a character takes, for putting a caret under
/// the right character of a query (East Asian Width, UAX #11).
///
/// Wide (W) and fullwidth (F) characters and emoji shown as emoji take two
/// columns; everything else one. A cluster takes the width of its first
/// scalar (the marks, joiners and selectors after it add none), except
/// that a variation selector 16 asks for emoji presentation (two).
enum DisplayWidth {
    static func columns(of character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.value < 0x1100 { return 1 }
        if isWide(first) || first.properties.isEmojiPresentation { return 2 }
        if first.properties.isEmoji && scalars.contains("\u{FE0F}") { return 2 }
        return 1
    }

    /// The East Asian Wide and Fullwidth blocks (Unicode 15), outside emoji.
    static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        for range in wideRanges where range.contains(v) { return true }
        return false
    }

    private static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F,  // Hangul leading jamo
        0x2E80...0x303E,  // CJK radicals, Kangxi, CJK symbols and punctuation
        0x3041...0x33FF,  // Hiragana, Katakana, Bopomofo, Hangul compatibility jamo, CJK compatibility
        0x3400...0x4DBF,  // CJK extension A
        0x4E00...0x9FFF,  // CJK unified ideographs
        0xA000...0xA4CF,  // Yi
        0xA960...0xA97F,  // Hangul jamo extended A
        0xAC00...0xD7A3,  // Hangul syllables
        0xF900...0xFAFF,  // CJK compatibility ideographs
        0xFE10...0xFE19,  // vertical forms
        0xFE30...0xFE6F,  // CJK compatibility forms, small form variants
        0xFF00...0xFF60,  // fullwidth forms
        0xFFE0...0xFFE6,  // fullwidth signs
        0x16FE0...0x16FE4, 0x17000...0x18CFF, 0x1B000...0x1B2FF,  // Tangut, Khitan, kana supplements
        0x1F200...0x1F2FF,  // enclosed ideographic supplement
        0x20000...0x3FFFD,  // CJK extensions B and later
    ]
}
