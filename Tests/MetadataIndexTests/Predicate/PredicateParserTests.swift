import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
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
        ("kMDItemFSName == 'raw\\yFF'", "kMDItemFSName == \"raw\\yFF\""),
        ("kMDItemFSName == 'caf\\xE9'", "kMDItemFSName == \"caf\u{E9}\""),
        ("kMDItemFSName == 'a\\012b'", "kMDItemFSName == \"a\\nb\""),
        ("kMDItemFSName LIKE 'a\\*b'", "kMDItemFSName LIKE \"a\\\\*b\""),
        ("kMDItemFSSize > 1000000", "kMDItemFSSize > 1000000"),
        ("kMDItemFSSize >= 0x10", "kMDItemFSSize >= 16"),
        ("kMDItemFSSize => 1e3", "kMDItemFSSize >= 1000"),
        ("kMDItemFSSize =< 2.5", "kMDItemFSSize <= 2.5"),
        ("kMDItemFSSize < -1", "kMDItemFSSize < -1"),
        ("kMDItemFSSize BETWEEN {1, 10}", "kMDItemFSSize BETWEEN {1, 10}"),
        ("kMDItemFSSize IN {1, 2, 3}", "kMDItemFSSize IN {1, 2, 3}"),
        ("kMDItemFSSize == nil", "kMDItemFSSize == nil"),
        ("kMDItemFSSize != NULL", "kMDItemFSSize != nil"),
        ("kMDItemFSName IN {'a.txt', \"b.txt\"}", "kMDItemFSName IN {\"a.txt\", \"b.txt\"}"),
        ("kMDItemFSName in[c] {'A'}", "kMDItemFSName IN[c] {\"A\"}"),
        ("kMDItemFSName MATCHES[c] '.*[0-9]{4}\\\\.jpg'", "kMDItemFSName MATCHES[c] \".*[0-9]{4}\\\\.jpg\""),
        (
            "kMDItemFSContentChangeDate > CAST(700000000, \"NSDate\")",
            "kMDItemFSContentChangeDate > CAST(700000000, \"NSDate\")"
        ),
        (
            "kMDItemFSCreationDate BETWEEN {CAST(0, 'NSDate'), CAST(86400.5, 'NSDate')}",
            "kMDItemFSCreationDate BETWEEN {CAST(0, \"NSDate\"), CAST(86400.5, \"NSDate\")}"
        ),
        ("kMDItemURL BEGINSWITH 'file:///home/'", "kMDItemURL BEGINSWITH \"file:///home/\""),
        ("NSMetadataItemFSSizeKey > 5", "kMDItemFSSize > 5"),
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
        ("kMDItemFSName ==", 16, "expected a value after '==', found the end of the query"),
        ("kMDItemFSName == 'abc", 17, "unterminated string"),
        ("kMDItemFSName LIKE[x] 'a'", 19, "unknown comparison option 'x'"),
        ("kMDItemFSName LIKE[c 'a'", 21, "expected ']'"),
        ("kMDItemFoo == 'a'", 0, "unknown attribute 'kMDItemFoo'"),
        ("kMDItemFSName MATCHE 'a'", 14, "expected an operator"),
        ("kMDItemFSName > 'a'", 14, "> compares numbers or dates; kMDItemFSName is a string"),
        ("kMDItemFSName == 'a' AND", 24, "at the end of the query"),
        ("kMDItemFSName == 'a' kMDItemFSName == 'b'", 21, "after a complete predicate"),
        ("(kMDItemFSName == 'a'", 21, "expected ')'"),
        ("kMDItemFSName == 'a')", 20, "after a complete predicate"),
        ("kMDItemFSName LIKE 'abc\\\\'", 23, "lone backslash"),
        ("kMDItemFSName == 'a' & kMDItemFSName == 'b'", 21, "expected '&&'"),
        ("kMDItemFSName == 'a' | kMDItemFSName == 'b'", 21, "expected '||'"),
        ("kMDItemFSName == 42", 17, "kMDItemFSName is a string: compare it with a quoted string, not '42'"),
        ("kMDItemFSSize > 'big'", 16, "kMDItemFSSize is a number: compare it with a number"),
        ("kMDItemFSContentChangeDate > 5", 29, "kMDItemFSContentChangeDate is a date"),
        ("kMDItemFSContentChangeDate > 'yesterday'", 29, "kMDItemFSContentChangeDate is a date"),
        ("kMDItemFSSize LIKE '1*'", 14, "LIKE compares strings; kMDItemFSSize is a number"),
        ("kMDItemFSSize ==[c] 5", 14, "[c] and [d] apply to strings"),
        ("kMDItemFSSize BETWEEN {1}", 22, "BETWEEN needs a list of two values"),
        ("kMDItemFSSize BETWEEN 5", 22, "BETWEEN needs a list of two values"),
        ("kMDItemFSName BETWEEN {'a', 'b'}", 14, "BETWEEN compares numbers or dates"),
        ("kMDItemFSSize IN 'a'", 17, "IN needs a list"),
        ("kMDItemFSName IN {'a', 2}", 17, "kMDItemFSName is a string"),
        ("kMDItemFSName IN {'a' 'b'}", 22, "expected ',' or '}'"),
        // At the mistake, as ICU places it: the end, where ) is missing.
        ("kMDItemFSName MATCHES '(unclosed'", 32, "invalid regular expression for MATCHES: its parentheses"),
        ("kMDItemFSName MATCHES 'a\\0b'", 24, "NUL character"),
        ("kMDItemFSNam == 'a'", 0, "unknown attribute 'kMDItemFSNam' (did you mean kMDItemFSName?)"),
        ("kmditemfsname == 'a'", 0, "(did you mean kMDItemFSName?)"),
        ("kMDItemFSSize < nil", 16, "nil compares with == or != only"),
        ("kMDItemFSName == bare", 17, "quote strings"),
        ("kMDItemFSContentChangeDate > CAST(1, 'NSNumber')", 37, "CAST supports the type \"NSDate\" only"),
        ("kMDItemFSName == %@", 17, "missing argument for %@"),
        ("%K == 'a'", 0, "missing argument for %K"),
        ("== 'a'", 0, "expected an attribute key"),
        ("kMDItemFSName == 'bad \\x4'", 22, "two hex digits"),
        ("kMDItemFSName == 'bad \\uD800'", 22, "Unicode scalar"),
        ("kMDItemFSName == 'a' @", 21, "unexpected character"),
        ("%", 0, "format specifier"),
        // What metadata queries cannot express says so.
        ("SUBQUERY(kMDItemFSName, $x, $x == 'a').@count > 0", 0, "do not support SUBQUERY"),
        ("kMDItemFSName == $name", 17, "do not support variables"),
        ("$name == 'a'", 0, "do not support variables"),
        ("lowercase(kMDItemFSName) == 'a'", 0, "do not support functions"),
        ("kMDItemFSName == now()", 17, "do not support functions"),
        ("kMDItemFSSize == 0b102", 17, "expected binary digits"),
        ("kMDItemFSName == 'a\\x4'", 19, "two hex digits after \\x"),
        ("kMDItemFSName ==[q] 'a'", 17, "unknown comparison option 'q'"),
        ("kMDItemFSName BEGINSWITH[w] 'a'", 14, "[w] (word-based) applies to ==, != and LIKE"),
        ("kMDItemFSName UTI-CONFORMS-TO 'public.image'", 14, "applies to kMDItemContentType"),
        ("NSMetadataItemIsUbiquitousKey == 'yes'", 33, "compare it with YES or NO"),
        ("NSMetadataItemIsUbiquitousKey > NO", 30, "compares numbers or dates"),
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

    @Test func substitutionFillsKeysAndValues() throws {
        let predicate = try MetadataPredicate(
            format: "%K LIKE %@ AND %K > %d AND %K < %f AND %K IN %@", MetadataAttribute.fsName, "*.mov",
            MetadataAttribute.fsSize, 1_000_000, "kMDItemFSSize", 2.5e9, "kMDItemFSName", ["a", "b"])
        #expect(
            predicate
                == (try MetadataPredicate(
                    "kMDItemFSName LIKE '*.mov' AND kMDItemFSSize > 1000000 AND kMDItemFSSize < 2500000000 AND kMDItemFSName IN {'a', 'b'}"
                )))
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        let dated = try MetadataPredicate(format: "%K >= %@", "NSMetadataItemFSContentChangeDateKey", date)
        #expect(
            dated
                == (try MetadataPredicate(
                    "kMDItemFSContentChangeDate >= CAST(\(1_700_000_000 - 978_307_200), 'NSDate')")))
    }

    @Test func quotedSpecifiersStayLiteral() throws {
        let predicate = try MetadataPredicate(format: "kMDItemFSName == '%@'")
        #expect(predicate == (try MetadataPredicate("kMDItemFSName == \"%@\"")))
    }

    @Test(arguments: [
        ("kMDItemFSName == %@", [] as [PredicateArgument], "missing argument for %@"),
        ("kMDItemFSName == %@", [.string("a"), .string("b")], "2 arguments given but the format uses 1"),
        ("kMDItemFSSize > %d", [.string("big")], "%d needs an integer argument"),
        ("kMDItemFSSize > %@", [.string("big")], "kMDItemFSSize is a number"),
        ("%K == 'a'", [.integer(3)], "%K needs a key string argument"),
        ("%K == 'a'", [.string("kMDItemNope")], "unknown attribute 'kMDItemNope'"),
        ("kMDItemFSName == %x", [.string("a")], "unknown format specifier %x"),
    ])
    func substitutionErrors(format: String, arguments: [PredicateArgument], message: String) {
        #expect {
            _ = try MetadataPredicate(format: format, arguments: arguments)
        } throws: { error in
            guard let error = error as? MetadataError, error.code == .querySyntax, error.offset != nil else {
                return false
            }
            #expect(error.message.contains(message), "\(error.message)")
            return true
        }
    }

    @Test func deepNestingIsAnErrorNotACrash() throws {
        let deep = String(repeating: "(", count: 5000) + "TRUEPREDICATE" + String(repeating: ")", count: 5000)
        #expect(throws: MetadataError.self) { try MetadataPredicate(deep) }
        let nots = String(repeating: "NOT ", count: 5000) + "TRUEPREDICATE"
        #expect(throws: MetadataError.self) { try MetadataPredicate(nots) }
        let fine = String(repeating: "(", count: 100) + "TRUEPREDICATE" + String(repeating: ")", count: 100)
        #expect((try? MetadataPredicate(fine)) == .alwaysTrue)
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

    /// The caret sits under the mistake after text that takes two columns
    /// (East Asian wide characters, emoji), and one per combined character.
    @Test(arguments: [
        ("kMDItemFSName == '\u{5831}\u{544A}' AND x", 28),
        ("kMDItemFSName == '\u{D55C}\u{AD6D}\u{C5B4}' AND x", 30),
        ("kMDItemFSName == 'cafe\u{301}' AND x", 28),
        ("kMDItemFSName == '\u{1F44D}\u{1F3FD}' AND x", 26),
        ("kMDItemFSName == '\u{FF21}' AND x", 26),
    ])
    func caretColumnCountsDisplayWidth(query: String, column: Int) throws {
        do {
            _ = try MetadataPredicate(query)
            Issue.record("accepted")
        } catch {
            let caretLine = error.description.split(separator: "\n").last ?? ""
            #expect(
                caretLine.firstIndex(of: "^").map { caretLine.distance(from: caretLine.startIndex, to: $0) } == column
                    + 2)
        }
    }

    /// "Did you mean" is the same every run, and knows the keys people try.
    @Test(arguments: [
        ("kMDItemModificationDate", "kMDItemFSContentChangeDate"),
        ("kMDItemContentModificationDat", "kMDItemContentModificationDate"),
        ("kMDItemName", "kMDItemFSName"),
        ("name", "kMDItemFSName"),
        ("size", "kMDItemFSSize"),
        ("KMDITEMFSNAME", "kMDItemFSName"),
        ("kMDItemFSNam", "kMDItemFSName"),
        ("NSMetadataItemFSNameKy", "NSMetadataItemFSNameKey"),
        ("kMDItemPaths", "kMDItemPath"),
        ("kMDItemURLs", "kMDItemURL"),
    ])
    func suggestionsAreDeterministic(key: String, suggestion: String) {
        for _ in 0..<3 { #expect(MetadataAttribute.suggestion(for: key) == suggestion) }
        #expect(MetadataAttribute.suggestion(for: "zzzzzzzzzzzz") == nil)
    }

    /// New constructs print in a form that parses back to the same predicate.
    @Test(arguments: [
        "ANY kMDItemContentTypeTree == 'public.image'", "NONE kMDItemContentTypeTree LIKE[c] 'public.*'",
        "kMDItemFSName IN 'my report.txt'", "kMDItemContentType UTI-CONFORMS-TO 'public.image'",
        "kMDItemContentType UTI-EQUALS 'public.png'", "kMDItemFSName ==[cdw] 'report'", "kMDItemFSName LIKE[w] 'go*'",
        "NSMetadataUbiquitousItemPercentDownloadedKey < 100", "NSMetadataItemIsUbiquitousKey == YES",
        "kMDItemFSName == 'a\\yFF\\yFE'",
    ])
    func newConstructsRoundTrip(query: String) throws {
        let predicate = try MetadataPredicate(query)
        #expect(try MetadataPredicate(predicate.predicateFormat) == predicate, "\(predicate.predicateFormat)")
    }
}
