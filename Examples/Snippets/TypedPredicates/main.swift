import Foundation
import MetadataIndex

let big = MetadataPredicate.name(like: "*.png", options: .caseInsensitive) && .size(greaterThan: 1_000_000)
let recent = MetadataPredicate.modified(after: Date(timeIntervalSinceNow: -7 * 86_400)) || !.has(.fsSize)
print(big.predicateFormat, recent.predicateFormat)
