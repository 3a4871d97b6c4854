import Foundation
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQLive
@testable import MDQSystem

extension LiveSuites {
    /// A query whose scope's rules differ from the indexed root's (hidden
    /// names, excluded folder names, excluded names at the scope's top)
    /// judges each match by the folders between it and the scope. Those
    /// judgements are remembered per folder while a slice is scanned; the
    /// answer must be what a walk of each path by the rules gives, for
    /// scopes at every depth and any mix of rules.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct ScopeWalkTests {
        @Test func everyMatchIsJudgedByTheFoldersAboveIt() throws {
            let temp = try TemporaryDirectory()
            let top = try temp.folder("top")
            var generator = SeededGenerator(seed: 38)
            let stems = ["a", "b", ".h", "skip", "node", "c.txt"]
            var folders = [""]
            var paths: [String] = []
            for _ in 0..<600 {
                let parent = folders.randomElement(using: &generator)!
                let name = stems.randomElement(using: &generator)! + "\(Int.random(in: 0..<3, using: &generator))"
                let relative = parent.isEmpty ? name : parent + "/" + name
                guard !paths.contains(relative), parent.split(separator: "/").count < 6 else { continue }
                paths.append(relative)
                if Bool.random(using: &generator) {
                    _ = try temp.folder("top/" + relative)
                    folders.append(relative)
                } else {
                    _ = try temp.file("top/" + relative)
                }
            }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let retained = try engine.retain(ScopeRequest(path: top, rules: ScopeRules(includeHidden: true)))
            defer { _ = retained }
            func names(_ list: String...) -> Set<[UInt8]> { Set(list.map { Array($0.utf8) }) }
            let ruleSets: [ScopeRules] = [
                ScopeRules(),
                ScopeRules(includeHidden: true, excludedFolderNames: names("skip0", "node0", ".h1")),
                ScopeRules(excludedRootChildNames: names("node0", "a1", "skip2")),
                ScopeRules(excludedFolderNames: names("skip1", "b0"), excludedRootChildNames: names("c.txt0", "a0")),
            ]
            // The scopes: the root and folders at each depth.
            let scopes = [""] + folders.filter { !$0.isEmpty }.shuffled(using: &generator).prefix(12)
            for scope in scopes {
                for rules in ruleSets {
                    let path = scope.isEmpty ? top : top.appending(scope)
                    let request = ScopeRequest(path: path, rules: rules)
                    guard
                        case .success(let answer) = try engine.answer(
                            scopes: [request], predicate: try MetadataPredicate("TRUEPREDICATE"), output: .paths)
                    else {
                        Issue.record("\(scope) not covered")
                        continue
                    }
                    let found = Set(
                        answer.paths.split(separator: 0, omittingEmptySubsequences: true).map {
                            String(decoding: $0, as: UTF8.self)
                        })
                    let expected = Set(
                        paths.compactMap { relative -> String? in
                            let inside: Substring
                            if scope.isEmpty {
                                inside = Substring(relative)
                            } else {
                                guard relative.hasPrefix(scope + "/") else { return nil }
                                inside = relative.dropFirst(scope.count + 1)
                            }
                            let parts = inside.split(separator: "/").map { Array($0.utf8) }
                            for (i, part) in parts.enumerated() {
                                guard rules.admits(part, isRootChild: i == 0) else { return nil }
                                if i < parts.count - 1, !part.withUnsafeBytes({ rules.descends(into: $0) }) {
                                    return nil
                                }
                            }
                            return top.string + "/" + relative
                        })
                    #expect(found == expected, "scope \(scope.isEmpty ? "/" : scope), rules \(rules)")
                }
            }
        }
    }
}
