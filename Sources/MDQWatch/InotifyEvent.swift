import CInotifyTools
import MDQSystem

/// The inotify event bits mdq uses, as a Swift option set (the C macros,
/// `IN_ALL_EVENTS` among them, do not all import).
struct InotifyMask: OptionSet, Sendable, Hashable {
    let rawValue: UInt32
    init(rawValue: UInt32) { self.rawValue = rawValue }

    static let modify = InotifyMask(rawValue: UInt32(IN_MODIFY))
    static let attributes = InotifyMask(rawValue: UInt32(IN_ATTRIB))
    static let closeWrite = InotifyMask(rawValue: UInt32(IN_CLOSE_WRITE))
    static let movedFrom = InotifyMask(rawValue: UInt32(IN_MOVED_FROM))
    static let movedTo = InotifyMask(rawValue: UInt32(IN_MOVED_TO))
    static let create = InotifyMask(rawValue: UInt32(IN_CREATE))
    static let delete = InotifyMask(rawValue: UInt32(IN_DELETE))
    static let deleteSelf = InotifyMask(rawValue: UInt32(IN_DELETE_SELF))
    static let moveSelf = InotifyMask(rawValue: UInt32(IN_MOVE_SELF))
    static let unmount = InotifyMask(rawValue: UInt32(IN_UNMOUNT))
    static let queueOverflow = InotifyMask(rawValue: UInt32(IN_Q_OVERFLOW))
    static let ignored = InotifyMask(rawValue: UInt32(IN_IGNORED))
    static let isDirectory = InotifyMask(rawValue: UInt32(IN_ISDIR))
    static let onlyDirectory = InotifyMask(rawValue: UInt32(IN_ONLYDIR))
    static let dontFollow = InotifyMask(rawValue: UInt32(IN_DONT_FOLLOW))
    static let excludeUnlinked = InotifyMask(rawValue: UInt32(IN_EXCL_UNLINK))

    /// What a scope folder is watched for: its entries' life and content,
    /// and its own deletion or move. No open/access events: reading files
    /// must not cause traffic. No `IN_DONT_FOLLOW`: watches are added
    /// through `/proc/self/fd/N`, a link the kernel must follow, to a folder
    /// that was itself opened with `O_NOFOLLOW`, so no symlink is followed.
    static let folderWatch: InotifyMask = [
        .create, .delete, .modify, .attributes, .closeWrite, .movedFrom, .movedTo, .deleteSelf, .moveSelf,
        .onlyDirectory, .excludeUnlinked,
    ]
}

/// One inotify event, copied out of libinotifytools' static buffer. Never
/// leaves the inotify backend: `InotifyMoves` turns events into
/// `FolderChange`s.
struct InotifyEvent: Sendable, Hashable {
    var watch: Int32
    var mask: InotifyMask
    var cookie: UInt32
    /// The entry's name inside the watched folder; empty for events about
    /// the folder itself.
    var name: [UInt8]
}

/// Pairs a rename's two halves inside the inotify backend, so that the
/// seam carries one `moved` with both ends.
///
/// inotify reports a rename as an `IN_MOVED_FROM` and an `IN_MOVED_TO`
/// sharing a cookie, usually adjacent, but another event can come between
/// them and they can be split across reads; a move out of the watched
/// folders has no `IN_MOVED_TO`. So a `IN_MOVED_FROM` is held, with every
/// event read after it (order is kept: a name made again at the old place
/// after the rename must apply after it), until its partner comes (the two
/// become one `moved`, at the place of the first half) or until the
/// kernel's queue is known to hold no partner: then it is a `movedAway`.
///
/// That is known without a timer: the watcher touches a file of its own
/// (a barrier) and reads on; inotify queues events in order, so once the
/// barrier's event is read every event queued before the touch has been.
/// A half is given two barriers (the second covers a partner the kernel
/// queued just after the first touch, a rename caught between its two
/// halves). A move out of the scopes thus costs two reads of the
/// watcher's own events, not a wait.
struct InotifyMoves {
    /// An event read and not handed on yet.
    struct Held {
        var event: InotifyEvent
        /// A MOVED_FROM's partner, once read.
        var partner: InotifyEvent?
        /// A MOVED_FROM still waiting for its partner.
        var open: Bool
        /// Barriers touched before it was held (it counts those touched after).
        var heldAtTouch: Int
        /// Barriers read since it was held.
        var passes = 0
    }

    private(set) var held: [Held] = []
    /// Barrier touches so far; at most one is unread at a time.
    private(set) var touches = 0
    private(set) var barrierOutstanding = false

    var isHolding: Bool { !held.isEmpty }

    /// Takes an event read from the kernel. Returns whether a barrier is
    /// to be touched now.
    mutating func read(_ event: InotifyEvent) -> Bool {
        if event.mask.contains(.movedTo), event.cookie != 0,
            let index = held.firstIndex(where: { $0.open && $0.event.cookie == event.cookie })
        {
            held[index].partner = event
            held[index].open = false
            return false
        }
        let opens = event.mask.contains(.movedFrom) && event.cookie != 0
        held.append(Held(event: event, open: opens, heldAtTouch: touches))
        return opens && touchIfNeeded()
    }

    /// The barrier's event was read: halves held before its touch have
    /// had one more pass; those with two are moves away. Returns whether
    /// to touch the barrier again.
    mutating func barrierRead() -> Bool {
        barrierOutstanding = false
        for index in held.indices where held[index].open && held[index].heldAtTouch < touches {
            held[index].passes += 1
            if held[index].passes >= 2 { held[index].open = false }
        }
        return touchIfNeeded()
    }

    private mutating func touchIfNeeded() -> Bool {
        guard !barrierOutstanding, held.contains(where: \.open) else { return false }
        barrierOutstanding = true
        touches += 1
        return true
    }

    /// Hands on the events before the first half still waiting.
    mutating func ready() -> ArraySlice<Held> {
        let end = held.firstIndex(where: \.open) ?? held.endIndex
        defer { held.removeFirst(end) }
        return held[..<end]
    }
}
