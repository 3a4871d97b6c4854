public import Foundation
import MetadataIndex

extension NSMetadataQuery {
    // MARK: Enumeration

    /// Calls `block` with each result object and its index; set the
    /// pointee of its third argument to true to stop. Reads one snapshot of
    /// the results, so updates need not be disabled.
    ///
    /// - Parameter block: called for each result in order.
    public func enumerateResults(_ block: (Any, Int, UnsafeMutablePointer<ObjCBool>) -> Void) {
        enumerateResults(options: [], using: block)
    }

    /// `enumerateResults(_:)` with options: `.reverse` goes from the last
    /// result; `.concurrent` is allowed and enumerates in order on the
    /// calling thread.
    ///
    /// - Parameters:
    ///   - opts: enumeration options.
    ///   - block: called for each result.
    public func enumerateResults(
        options opts: NSEnumerationOptions = [], using block: (Any, Int, UnsafeMutablePointer<ObjCBool>) -> Void
    ) {
        let snapshot = results
        var stop = ObjCBool(false)
        let order = opts.contains(.reverse) ? Array(snapshot.indices.reversed()) : Array(snapshot.indices)
        for index in order {
            withUnsafeMutablePointer(to: &stop) { block(snapshot[index], index, $0) }
            if stop.boolValue { return }
        }
    }

    // MARK: Groups and value lists

    /// The results grouped by `groupingAttributes`, one level per attribute,
    /// groups in order of first appearance. Derived from the current
    /// results on each read.
    ///
    /// - Complexity: O(n) per grouping attribute.
    public var groupedResults: [NSMetadataQueryResultGroup] {
        let groups = state.withLock { s in query.groupedResults.map { Self.wrap($0, in: &s) } }
        return groups.map(makeGroup)
    }

    /// For each of `valueListAttributes`, its values among the current
    /// results with their counts, most frequent first (the results without
    /// the attribute as a tuple whose `value` is nil).
    ///
    /// - Complexity: O(n) per value-list attribute.
    public var valueLists: [String: [NSMetadataQueryAttributeValueTuple]] {
        query.valueLists.mapValues { tuples in
            tuples.map { tuple in
                NSMetadataQueryAttributeValueTuple(
                    attribute: tuple.attribute,
                    value: tuple.attributeValue.map { replacementValue(tuple.attribute, $0.appleValue) },
                    count: tuple.count)
            }
        }
    }

    /// A group whose items are wrapped (under `state`), to be made an
    /// `NSMetadataQueryResultGroup` outside it.
    struct WrappedGroup {
        var group: MetadataQueryResultGroup
        var items: [NSMetadataItem]
        var subgroups: [WrappedGroup]?
    }

    private static func wrap(_ group: MetadataQueryResultGroup, in state: inout State) -> WrappedGroup {
        WrappedGroup(
            group: group, items: group.results.map { object(for: $0, in: &state) },
            subgroups: group.subgroups?.map { wrap($0, in: &state) })
    }

    private func makeGroup(_ wrapped: WrappedGroup) -> NSMetadataQueryResultGroup {
        let attribute = wrapped.group.attribute
        return NSMetadataQueryResultGroup(
            attribute: attribute,
            value: wrapped.group.attributeValue.map { replacementValue(attribute, $0.appleValue) } ?? NSNull(),
            subgroups: wrapped.subgroups?.map(makeGroup), results: present(wrapped.items))
    }

    // MARK: Result objects

    /// The object for a result of the current run: the one made when the
    /// result was first seen, given the attributes of `item` (the latest
    /// the query delivered), or a new one.
    static func object(for item: MetadataItem, in state: inout State) -> NSMetadataItem {
        if let known = state.items[item.id] {
            known.update(item)
            return known
        }
        let object = NSMetadataItem(item, run: state.run)
        state.items[item.id] = object
        return object
    }

    /// The objects to report for result items: the items themselves, or
    /// the delegate's replacements (asked once per result, without a lock
    /// held).
    func present(_ items: [NSMetadataItem]) -> [Any] {
        guard let delegate = state.withLock({ $0.delegate }) else { return items }
        let known = state.withLock { s in items.map { item in item.metadataItem.flatMap { s.replacements[$0.id] } } }
        var objects: [Any] = []
        var fresh: [(UInt64, Any)] = []
        for (item, replacement) in zip(items, known) {
            if let replacement {
                objects.append(replacement)
            } else {
                let replacement = delegate.metadataQuery(self, replacementObjectForResultObject: item)
                objects.append(replacement)
                if let id = item.metadataItem?.id { fresh.append((id, replacement)) }
            }
        }
        if !fresh.isEmpty {
            state.withLock { s in
                for (id, replacement) in fresh where s.items[id] != nil { s.replacements[id] = replacement }
            }
        }
        return objects
    }

    /// The delegate's replacement for an attribute value, or the value.
    func replacementValue(_ attribute: String, _ value: Any) -> Any {
        guard let delegate = state.withLock({ $0.delegate }) else { return value }
        return delegate.metadataQuery(self, replacementValueForAttribute: attribute, value: value)
    }

    // MARK: Notifications

    /// Posts a notification of the `MetadataQuery` again, on the same
    /// thread (its operation queue or its own), with this query as the
    /// object and result objects for its items. A new run forgets the
    /// objects of the last one (result identities start anew).
    func forward(_ note: Notification) {
        var userInfo = note.userInfo
        switch note.name {
        case .metadataQueryDidStartGathering:
            state.withLock { s in
                s.run = QueryRun()
                s.items = [:]
                s.replacements = [:]
            }
        case .metadataQueryDidUpdate:
            func items(_ key: String) -> [MetadataItem] { note.userInfo?[key] as? [MetadataItem] ?? [] }
            let (added, changed, removed) = state.withLock { s in
                let objects = (
                    items(MetadataQuery.addedItemsKey).map { Self.object(for: $0, in: &s) },
                    items(MetadataQuery.changedItemsKey).map { Self.object(for: $0, in: &s) },
                    items(MetadataQuery.removedItemsKey).map { Self.object(for: $0, in: &s) }
                )
                return objects
            }
            userInfo = [
                NSMetadataQueryUpdateAddedItemsKey: present(added),
                NSMetadataQueryUpdateChangedItemsKey: present(changed),
                NSMetadataQueryUpdateRemovedItemsKey: present(removed),
            ]
            // Removed results are no longer results: their objects (which
            // the client may keep) leave the run's table.
            state.withLock { s in
                for item in removed {
                    guard let id = item.metadataItem?.id else { continue }
                    s.items[id] = nil
                    s.replacements[id] = nil
                }
            }
        default:
            break
        }
        NotificationCenter.default.post(name: note.name, object: self, userInfo: userInfo)
    }
}
