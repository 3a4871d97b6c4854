import MDQSystem

extension MetadataAttribute {
    /// Keys people try that mdq spells differently, with the key they mean.
    static let aliases: [String: MetadataAttribute] = [
        "kMDItemFSContentModificationDate": .contentChangeDate,
        "kMDItemModificationDate": .contentChangeDate,
        "kMDItemContentCreationDate": .creationDate,
        "kMDItemCreationDate": .creationDate,
        "kMDItemName": .fsName,
        "kMDItemFileName": .fsName,
        "kMDItemSize": .fsSize,
        "kMDItemLogicalSize": .fsSize,
        "kMDItemPhysicalSize": .fsSize,
        "name": .fsName,
        "filename": .fsName,
        "size": .fsSize,
        "path": .path,
        "url": .url,
        "modified": .contentChangeDate,
        "date": .contentChangeDate,
        "created": .creationDate,
        "type": .contentType,
    ]

    /// The known key closest to a misspelt one, for "did you mean"
    /// messages: a known alias (`kMDItemModificationDate`), the same
    /// key in another case, or the key at the smallest edit distance (at
    /// most 3). Ties go to the `kMDItem...` spelling, then alphabetical
    /// order, so the answer never depends on hash order.
    package static func suggestion(for key: String) -> String? {
        let lowered = key.lowercased()
        if let alias = aliases.first(where: { $0.key.lowercased() == lowered })?.value { return alias.rawValue }
        var best: (distance: Int, isConstant: Int, key: String)?
        for (candidate, attribute) in spellings {
            if candidate.lowercased() == lowered { return candidate }
            let distance = editDistance(key, candidate, limit: 3)
            guard distance <= 3 else { continue }
            let entry = (distance: distance, isConstant: candidate == attribute.rawValue ? 0 : 1, key: candidate)
            if best.map({ entry < $0 }) ?? true { best = entry }
        }
        return best?.key
    }

    /// Levenshtein distance over bytes, or `limit + 1` when the lengths
    /// alone rule it out.
    private static func editDistance(_ a: String, _ b: String, limit: Int) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        if abs(a.count - b.count) > limit { return limit + 1 }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
