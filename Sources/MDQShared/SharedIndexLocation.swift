import MDQEngine
package import MDQSystem

/// Where this host's users find the shared index across hosts:
/// `$MDQ_SHARED`, else `SHARED` in the system index's configuration.
package enum SharedIndexLocation {
    package static let variable = "MDQ_SHARED"

    package static func url() throws(MetadataError) -> String {
        if let url = ProcessEnvironment.variable(variable), !url.isEmpty { return url }
        if let url = try SystemConfiguration.read(from: nil).shared { return url }
        throw MetadataError.invalidArgument(
            "no shared index is configured: set SHARED in /etc/mdq/system.conf or $\(variable) to its "
                + "postgresql:// URL")
    }
}
