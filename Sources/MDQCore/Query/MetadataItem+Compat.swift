package import Foundation
import MDQSystem

extension MetadataItem {
    /// Whether this snapshot matches `predicate`, the ubiquitous keys
    /// answering as its query gave them: what MetadataCompat's
    /// `NSPredicate.evaluate(with:)` does for a result object.
    ///
    /// - Parameter predicate: the predicate to evaluate.
    /// - Returns: whether the item matches.
    package func matches(_ predicate: MetadataPredicate) -> Bool {
        CompiledPredicate(predicate).makeEvaluator().matches(ItemSubject(item: self))
    }
}

extension MetadataSortDescriptor {
    /// Orders two items as a query sorted by this descriptor orders its
    /// results: what MetadataCompat's `NSSortDescriptor.compare(_:to:)`
    /// does for result objects.
    ///
    /// - Returns: the order of `a` relative to `b`.
    package func order(_ a: MetadataItem, _ b: MetadataItem) -> ComparisonResult {
        compare(a, b)
    }
}
