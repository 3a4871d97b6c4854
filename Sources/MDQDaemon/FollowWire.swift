import MDQEngine
import MDQWatch
import MDQWire

/// The `follow` stream's changes on the wire: `FolderChange`'s vocabulary,
/// each folder by its path and file handle (`EventFollower.Event`). One
/// object per change:
///
///     {"change":"moved","folder":"/srv/a","handle":"…","name":"x",
///      "to":{"folder":"/srv/b","handle":"…","name":"y"},"isFolder":false}
///
/// `change` is one of `created`, `removed`, `changed` (with `"attributes"`
/// and/or `"contents"` true), `moved` (with `to`), `movedAway`,
/// `arrived`, `folderGone` and `overflow` (the folder's contents are to be
/// listed again); names and paths are bytes as the protocol writes them.
enum FollowWire {
    static func write(_ event: EventFollower.Event, to line: inout JSONWriter) {
        line.raw("{\"change\":")
        line.string(event.kind.rawValue)
        line.raw(",")
        place(event.place, to: &line)
        if let destination = event.destination {
            line.raw(",\"to\":{")
            place(destination, to: &line)
            line.raw("}")
        }
        if event.isFolder { line.raw(",\"isFolder\":true") }
        if event.aspects.contains(.attributes) { line.raw(",\"attributes\":true") }
        if event.aspects.contains(.contents) { line.raw(",\"contents\":true") }
        line.raw("}")
    }

    private static func place(_ place: EventFollower.Place, to line: inout JSONWriter) {
        line.bytesField("folder", place.folder)
        line.raw(",")
        line.bytesField("handle", place.handle)
        line.raw(",")
        line.bytesField("name", place.name)
    }

    /// The change `item` holds; nil when it is not one this side reads.
    static func event(_ item: JSONValue) -> EventFollower.Event? {
        guard let kind = item["change"]?.string.flatMap(EventFollower.Event.Kind.init(rawValue:)),
            let at = place(item)
        else { return nil }
        var destination: EventFollower.Place?
        if kind == .moved {
            guard let to = item["to"].flatMap(place) else { return nil }
            destination = to
        }
        var aspects: ChangeAspects = []
        if item["attributes"]?.bool == true { aspects.insert(.attributes) }
        if item["contents"]?.bool == true { aspects.insert(.contents) }
        return EventFollower.Event(
            kind: kind, place: at, destination: destination, isFolder: item["isFolder"]?.bool == true,
            aspects: aspects)
    }

    private static func place(_ item: JSONValue) -> EventFollower.Place? {
        guard let folder = item.bytesField("folder"), let handle = item.bytesField("handle"),
            let name = item.bytesField("name")
        else { return nil }
        return EventFollower.Place(folder: folder, handle: handle, name: name)
    }
}
