import Testing

@testable import MetadataIndex

struct PredicateParserTests {
    @Test(arguments: [
        ("kMDItemFSName == 'a.txt'", "kMDItemFSName == \"a.txt\""),
        ("kMDItemFSName = 'a.txt'", "kMDItemFSName == \"a.txt\""),
        ("kMDItemFSName != 'a'", "kMDItemFSName != \"a\""),
        ("kMDItemFSName <> 'a'", "kMDItemFSName != \"a\""),
        ("kMDItemFSName like[c] '*.PNG'", "kMDItemFSName LIKE[c] \"*.PNG\""),
        ("kMDItemFSName BEGINSWITH[d] 'e'", "kMDItemFSName BEGINSWITH[d] \"e\""),
        ("kMDItemFSName endswith[cd] \".md\"", "kMDItemFSName ENDSWITH[cd] \".md\""),
        ("kMDItemFSName CONTAINS[dc] 'x'", "kMDItemFSName CONTAINS[cd] \"x\""),
        ("NSMetadataItemFSNameKey == 'a'", "kMDItemFSName == \"a\""),
        ("NSMetadataItemDisplayNameKey == 'a'", "kMDItemDisplayName == \"a\""),
        ("NSMetadataItemPathKey CONTAINS '/x/'", "kMDItemPath CONTAINS \"/x/\""),
        ("TRUEPREDICATE", "TRUEPREDICATE"),
        ("falsepredicate", "FALSEPREDICATE"),
        ("kMDItemFSName == 'tab\\there'", "kMDItemFSName == \"tab\\there\""),
        ("kMDItemFSName == 'quote\\'s'", "kMDItemFSName == \"quote's\""),
        ("kMDItemFSName == \"dq\\\"x\"", "kMDItemFSName == \"dq\\\"x\""),
        ("kMDItemFSName == 'caf\\u00E9'", "kMDItemFSName == \"café\""),
        ("kMDItemFSName == 'raw\\xFF'", "kMDItemFSName == \"raw\\xFF\""),
        ("kMDItemFSName LIKE 'a\\*b'", "kMDItemFSName LIKE \"a\\\\*b\""),
    ])
    func parsesAndFormatsComparisons(query: String, format: String) throws {
        let predicate = try MetadataPredicate(query)
        #expect(predicate.predicateFormat == format)
        // The format parses back to an equal predicate.
        #expect(try MetadataPredicate(predicate.predicateFormat) == predicate)
    }

    @Test func notBindsTighterThanAndWhichBindsTighterThanOr() throws {
        let predicate = try MetadataPredicate(
            "NOT kMDItemFSName == 'a' AND kMDItemFSName == 'b' OR kMDItemFSName == 'c' && !kMDItemFSName == 'd'")
        let a = PredicateNode.comparison(Comparison(attribute: .fsName, op: .equal, options: [], value: .string([97])))
        let b = PredicateNode.comparison(Comparison(attribute: .fsName, op: .equal, options: [], value: .string([98])))
        let c = PredicateNode.comparison(Comparison(attribute: .fsName, op: .equal, options: [], value: .string([99])))
        let d = PredicateNode.comparison(Comparison(attribute: .fsName, op: .equal, options: [], value: .string([100])))
        #expect(predicate.node == .or([.and([.not(a), b]), .and([c, .not(d)])]))
    }

    @Test func parenthesesOverridePrecedence() throws {
        let predicate = try MetadataPredicate("kMDItemFSName == 'a' AND (kMDItemFSName == 'b' OR kMDItemFSName == 'c')")
        guard case .and(let parts) = predicate.node, parts.count == 2, case .or = parts[1] else {
            Issue.record("expected AND of a comparison and an OR, got \(predicate.node)")
            return
        }
        #expect(try MetadataPredicate(predicate.predicateFormat) == predicate)
    }

    @Test func keywordsAreCaseInsensitive() throws {
        let lower = try MetadataPredicate(
            "kMDItemFSName like 'a' and not kMDItemFSName beginswith 'b' or truepredicate")
        let upper = try MetadataPredicate(
            "kMDItemFSName LIKE 'a' AND NOT kMDItemFSName BEGINSWITH 'b' OR TRUEPREDICATE")
        #expect(lower == upper)
    }

    @Test func rawBytesInQueryArePreserved() throws {
        let predicate = try MetadataPredicate(formatBytes: Array("kMDItemFSName == '".utf8) + [0xE9] + Array("'".utf8))
        guard case .comparison(let comparison) = predicate.node else {
            Issue.record("not a comparison")
            return
        }
        #expect(comparison.value == .string([0xE9]))
    }

    @Test(arguments: [
        ("", 0, "empty"),
        ("kMDItemFSName", 13, "expected an operator"),
        ("kMDItemFSName ==", 16, "expected a quoted string"),
        ("kMDItemFSName == 'abc", 17, "unterminated string"),
        ("kMDItemFSName LIKE[x] 'a'", 19, "unknown comparison option 'x'"),
        ("kMDItemFSName LIKE[c 'a'", 21, "expected ']'"),
        ("kMDItemFoo == 'a'", 0, "unknown attribute 'kMDItemFoo'"),
        ("kMDItemFSName MATCHES 'a'", 14, "expected an operator"),
        ("kMDItemFSName > 'a'", 14, "not '>'"),
        ("kMDItemFSName == 'a' AND", 24, "at the end of the query"),
        ("kMDItemFSName == 'a' kMDItemFSName == 'b'", 21, "after a complete predicate"),
        ("(kMDItemFSName == 'a'", 21, "expected ')'"),
        ("kMDItemFSName == 'a')", 20, "after a complete predicate"),
        ("kMDItemFSName LIKE 'abc\\\\'", 23, "lone backslash"),
        ("kMDItemFSName == 'a' & kMDItemFSName == 'b'", 21, "expected '&&'"),
        ("kMDItemFSName == 'a' | kMDItemFSName == 'b'", 21, "expected '||'"),
        ("kMDItemFSName == 42", 17, "expected a quoted string"),
        ("== 'a'", 0, "expected an attribute key"),
        ("kMDItemFSName == 'bad \\x4'", 22, "two hex digits"),
        ("kMDItemFSName == 'bad \\uD800'", 22, "Unicode scalar"),
        ("kMDItemFSName == 'a' @", 21, "unexpected character"),
        ("%", 0, "format specifier"),
    ])
    func malformedQueriesReportTheOffset(query: String, offset: Int, message: String) {
        #expect {
            _ = try MetadataPredicate(query)
        } throws: { error in
            guard let error = error as? MetadataError else { return false }
            #expect(error.code == .querySyntax)
            #expect(error.offset == offset, "offset of \(query)")
            #expect(error.message.contains(message), "\(error.message)")
            return true
        }
    }

    @Test func syntaxErrorDescriptionShowsACaretUnderTheMistake() {
        do {
            _ = try MetadataPredicate("kMDItemFSName LIKE[q] '*.png'")
            Issue.record("expected an error")
        } catch {
            let lines = error.description.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 3)
            #expect(lines[1] == "  kMDItemFSName LIKE[q] '*.png'")
            #expect(lines[2] == "                     ^")
        }
    }

    @Test func caretCountsCharactersNotBytes() {
        do {
            _ = try MetadataPredicate("kMDItemFSName == 'café' ]")
            Issue.record("expected an error")
        } catch {
            let lines = error.description.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines[2] == "  " + String(repeating: " ", count: 24) + "^")
        }
    }

    @Test func nameMatchingUsesContainsOrLikeWithCaseAndDiacriticFolding() throws {
        guard case .comparison(let plain) = try MetadataPredicate.nameMatching(Array("report".utf8)).node,
            case .comparison(let wild) = try MetadataPredicate.nameMatching(Array("*.png".utf8)).node
        else {
            Issue.record("not comparisons")
            return
        }
        #expect(plain.op == .contains && plain.options == [.caseInsensitive, .diacriticInsensitive])
        #expect(wild.op == .like && wild.options == [.caseInsensitive, .diacriticInsensitive])
    }
}
