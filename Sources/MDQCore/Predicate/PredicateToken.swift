import MDQSystem

/// One lexical token of a predicate, with the byte range it came from.
struct PredicateToken: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        /// `#word`: an identifier even when it is a reserved word.
        case escapedIdentifier(String)
        /// `.word` after a key (`%K.pathExtension`): a key path, which
        /// metadata queries do not support (the parser says so).
        case keyPath(String)
        /// Text the lexer could not read; the parser reports the lexer's
        /// error if it gets this far (an earlier mistake is reported first).
        case invalid
        case string([UInt8])
        case number(Double)
        case leftParen, rightParen, leftBrace, rightBrace, leftBracket, rightBracket, comma
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
        case and, or, not
        /// `%K`, `%@`, `%d`...: the letter after `%`.
        case formatSpecifier(String)
        case end
    }

    package var kind: Kind
    /// Byte offset of the token's first character in the query.
    var offset: Int
    var length: Int
}
