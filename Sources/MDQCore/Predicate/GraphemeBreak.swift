import MDQSystem

/// Extended grapheme cluster boundaries (UAX #29) over canonically
/// decomposed text, one scalar at a time, so `?` is one character as a
/// person sees it and a literal never starts or ends inside one: a Hangul
/// syllable written as jamo (L V T), an emoji with a skin tone, a flag (a
/// pair of regional indicators), a ZWJ sequence (👨‍👩‍👧), a letter with
/// its marks.
///
/// Classes come from the scalar's Unicode properties once per scalar (the
/// folder memoises them with its mappings); deciding a boundary is a few
/// comparisons and three small counters of state. The Indic conjunct rule
/// of Unicode 15.1 (GB9c, `क्ष` is one character) covers the six scripts
/// that rule names.
enum GraphemeBreak {
    /// A scalar's Grapheme_Cluster_Break class (with Extended_Pictographic).
    enum Class: UInt8 {
        case other = 0, cr, lf, control, extend, zwj, regionalIndicator, prepend, spacingMark
        case l, v, t, lv, lvt, extendedPictographic
        /// An Other (consonant) or Extend (virama) that GB9c also looks at.
        case indicConsonant, indicLinker

        /// The Grapheme_Cluster_Break class proper.
        @inline(__always)
        var base: Class {
            switch self {
            case .indicConsonant: .other
            case .indicLinker: .extend
            default: self
            }
        }
    }

    /// What the rules that look further back than one scalar need: the
    /// length of the run of regional indicators just before (GB12, GB13),
    /// and whether we are in `ExtPict Extend*` (1) or just after its `ZWJ`
    /// (2) (GB11).
    struct State {
        var regionalIndicators = 0
        var pictographic: UInt8 = 0
        /// GB9c: after an Indic consonant and its marks (1), or after a
        /// virama that follows one (2).
        var conjunct: UInt8 = 0

        /// Moves past a scalar of class `c`.
        @inline(__always)
        mutating func advance(_ c: Class) {
            regionalIndicators = c == .regionalIndicator ? regionalIndicators + 1 : 0
            switch c {
            case .extendedPictographic: pictographic = 1
            case .extend, .indicLinker: if pictographic != 1 { pictographic = 0 }
            case .zwj: pictographic = pictographic == 1 ? 2 : 0
            default: pictographic = 0
            }
            switch c {
            case .indicConsonant: conjunct = 1
            case .indicLinker: conjunct = conjunct == 0 ? 0 : 2
            case .extend, .zwj: break
            default: conjunct = 0
            }
        }

        /// As at the start of text: no sequence under way.
        var isClear: Bool { regionalIndicators == 0 && pictographic == 0 && conjunct == 0 }

        /// Moves past one or more scalars of class `.extend`.
        @inline(__always)
        mutating func advanceOverMarks() {
            regionalIndicators = 0
            if pictographic != 1 { pictographic = 0 }
        }

        /// Whether moving past a scalar of class `c` leaves the state as
        /// at the start of text, whatever it was.
        static func clears(_ c: Class) -> Bool {
            switch c {
            case .extend, .zwj, .regionalIndicator, .extendedPictographic, .indicConsonant, .indicLinker: false
            default: true
            }
        }
    }

    /// Whether a character boundary lies between a scalar of class
    /// `previous` and one of class `next`, `state` describing what came
    /// before `next`.
    @inline(__always)
    static func isBoundary(_ previous: Class, _ next: Class, _ state: State) -> Bool {
        if previous == .other && next == .other { return true }
        if next == .indicConsonant && state.conjunct == 2 { return false }  // GB9c
        switch (previous.base, next.base) {
        case (.cr, .lf): return false  // GB3
        case (.cr, _), (.lf, _), (.control, _), (_, .cr), (_, .lf), (_, .control): return true  // GB4, GB5
        case (.l, .l), (.l, .v), (.l, .lv), (.l, .lvt): return false  // GB6
        case (.lv, .v), (.lv, .t), (.v, .v), (.v, .t): return false  // GB7
        case (.lvt, .t), (.t, .t): return false  // GB8
        case (_, .extend), (_, .zwj), (_, .spacingMark): return false  // GB9, GB9a
        case (.prepend, _): return false  // GB9b
        case (.zwj, .extendedPictographic): return state.pictographic != 2  // GB11
        case (.regionalIndicator, .regionalIndicator): return state.regionalIndicators % 2 == 0  // GB12, GB13
        default: return true  // GB999
        }
    }

    /// The class of an ASCII byte.
    @inline(__always)
    static func asciiClass(_ byte: UInt8) -> Class {
        if byte >= 0x20 && byte != 0x7F { return .other }
        return byte == 0x0D ? .cr : byte == 0x0A ? .lf : .control
    }

    /// The class of any scalar.
    static func classify(_ scalar: Unicode.Scalar) -> Class {
        let v = scalar.value
        if v < 0x80 { return asciiClass(UInt8(v)) }
        switch v {
        case 0x200D: return .zwj
        case 0x1F1E6...0x1F1FF: return .regionalIndicator
        case 0x1100...0x115F, 0xA960...0xA97C: return .l
        case 0x1160...0x11A7, 0xD7B0...0xD7C6: return .v
        case 0x11A8...0x11FF, 0xD7CB...0xD7FB: return .t
        case 0xAC00...0xD7A3: return (v - 0xAC00) % 28 == 0 ? .lv : .lvt
        case 0x0600...0x0605, 0x06DD, 0x070F, 0x0890...0x0891, 0x08E2, 0x0D4E, 0x110BD, 0x110CD, 0x111C2...0x111C3,
            0x1193F, 0x11941, 0x11A3A, 0x11A84...0x11A89, 0x11D46, 0x11F02:
            return .prepend
        case 0x0E33, 0x0EB3: return .spacingMark
        case 0x094D, 0x09CD, 0x0ACD, 0x0B4D, 0x0C4D, 0x0D4D: return .indicLinker
        case 0x0915...0x0939, 0x0958...0x095F, 0x0978...0x097F, 0x0995...0x09A8, 0x09AA...0x09B0, 0x09B2,
            0x09B6...0x09B9, 0x09DC...0x09DD, 0x09DF, 0x09F0...0x09F1, 0x0A95...0x0AA8, 0x0AAA...0x0AB0,
            0x0AB2...0x0AB3, 0x0AB5...0x0AB9, 0x0AF9, 0x0B15...0x0B28, 0x0B2A...0x0B30, 0x0B32...0x0B33,
            0x0B35...0x0B39, 0x0B5C...0x0B5D, 0x0B5F, 0x0B71, 0x0C15...0x0C28, 0x0C2A...0x0C39, 0x0C58...0x0C5A,
            0x0D15...0x0D3A:
            return .indicConsonant
        default: break
        }
        let properties = scalar.properties
        if properties.isGraphemeExtend || properties.isEmojiModifier { return .extend }
        switch properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .format, .surrogate: return .control
        case .spacingMark: return .spacingMark
        default: break
        }
        if v >= 0xA9 && properties.isEmoji { return .extendedPictographic }
        return .other
    }
}
