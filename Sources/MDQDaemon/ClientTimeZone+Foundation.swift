package import Foundation
package import MDQWire

extension ClientTimeZone {
    /// This process's zone for Foundation: the one the C library names
    /// (`identifier()`; Foundation reads a `TZ` of a `:` or a path
    /// otherwise), else Foundation's own. The full command reads
    /// `$time.today` in it and names it to a daemon, as the front end does.
    package static var current: TimeZone {
        identifier().flatMap(TimeZone.init(identifier:)) ?? .current
    }
}
