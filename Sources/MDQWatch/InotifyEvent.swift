import CInotifyTools
import MDQSystem

/// The inotify event bits mdq uses, as a Swift option set (the C macros,
/// `IN_ALL_EVENTS` among them, do not all import).
package struct InotifyMask: OptionSet, Sendable, Hashable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package static let modify = InotifyMask(rawValue: UInt32(IN_MODIFY))
    package static let attributes = InotifyMask(rawValue: UInt32(IN_ATTRIB))
    static let closeWrite = InotifyMask(rawValue: UInt32(IN_CLOSE_WRITE))
    package static let movedFrom = InotifyMask(rawValue: UInt32(IN_MOVED_FROM))
    package static let movedTo = InotifyMask(rawValue: UInt32(IN_MOVED_TO))
    package static let create = InotifyMask(rawValue: UInt32(IN_CREATE))
    package static let delete = InotifyMask(rawValue: UInt32(IN_DELETE))
    package static let deleteSelf = InotifyMask(rawValue: UInt32(IN_DELETE_SELF))
    package static let moveSelf = InotifyMask(rawValue: UInt32(IN_MOVE_SELF))
    static let unmount = InotifyMask(rawValue: UInt32(IN_UNMOUNT))
    package static let queueOverflow = InotifyMask(rawValue: UInt32(IN_Q_OVERFLOW))
    package static let ignored = InotifyMask(rawValue: UInt32(IN_IGNORED))
    package static let isDirectory = InotifyMask(rawValue: UInt32(IN_ISDIR))
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
package struct InotifyEvent: Sendable, Hashable {
    package var watch: Int32
    package var mask: InotifyMask
    package var cookie: UInt32
    /// The entry's name inside the watched folder; empty for events about
    /// the folder itself.
    package var name: [UInt8]

    package init(watch: Int32, mask: InotifyMask, cookie: UInt32, name: [UInt8]) {
        self.watch = watch
        self.mask = mask
        self.cookie = cookie
        self.name = name
    }
}
