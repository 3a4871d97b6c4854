import CInotifyTools

/// The inotify event bits mdq uses, as a Swift option set (the C macros,
/// `IN_ALL_EVENTS` among them, do not all import).
struct InotifyMask: OptionSet, Sendable, Hashable {
    let rawValue: UInt32

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

/// One inotify event, copied out of libinotifytools' static buffer.
struct InotifyEvent: Sendable, Hashable {
    var watch: Int32
    var mask: InotifyMask
    var cookie: UInt32
    /// The entry's name inside the watched folder; empty for events about
    /// the folder itself.
    var name: [UInt8]
}
