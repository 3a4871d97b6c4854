import MDQEngine
package import MDQSystem

/// Where this host's users find the shared index across hosts:
/// `$MDQ_SHARED`, else `SHARED` in the system index's configuration.
package enum SharedIndexLocation {
    package static let variable = "MDQ_SHARED"

    /// The user's own credential, `$MDQ_SHARED` (blank is none): when it
    /// does not let them in, they are told, not answered from elsewhere.
    package static var usersOwn: String? {
        guard let url = ProcessEnvironment.variable(variable), url.contains(where: { !$0.isWhitespace }) else {
            return nil
        }
        return url
    }

    package static func url() throws(MetadataError) -> String {
        if let url = usersOwn { return url }
        if let url = try SystemConfiguration.read(from: nil).shared { return url }
        throw MetadataError.invalidArgument(
            "no shared index is configured: set SHARED in /etc/mdq/system.conf or $\(variable) to its "
                + "postgresql:// URL")
    }
}
