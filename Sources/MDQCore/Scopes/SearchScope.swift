import MDQSystem
public import SystemPackage

/// Where a query looks, named as on Apple platforms.
///
/// The raw strings equal Apple's constants, so code ported from
/// `NSMetadataQuery` can keep its scope values.
public struct SearchScope: Hashable, Sendable, CustomStringConvertible {
    /// Apple's constant string, or the folder path for a directory scope.
    public let rawValue: String
    /// For a directory scope, the folder.
    public let directory: FilePath?
    /// For a scope of the shared index across hosts, the hosts' names
    /// (empty for every host).
    public let hosts: [String]?
    /// For a folder of a host of the shared index (`host(_:folder:)`), the
    /// folder; `hosts` holds the host.
    public let hostFolder: FilePath?

    private init(_ rawValue: String) {
        self.rawValue = rawValue
        directory = nil
        hosts = nil
        hostFolder = nil
    }

    /// These hosts of the shared index across hosts (`mdq --host`), as
    /// their system indexes published them. A query of hosts searches the
    /// shared index its process is configured with (`$MDQ_SHARED`, else
    /// `SHARED` in `/etc/mdq/system.conf`).
    public static func hosts(_ names: [String]) -> SearchScope {
        SearchScope(hosts: names)
    }

    /// Every host of the shared index across hosts (`mdq --all-hosts`).
    public static let allHosts = SearchScope(hosts: [])

    private init(hosts: [String]) {
        rawValue = hosts.isEmpty ? "mdq.allHosts" : "mdq.hosts:" + hosts.joined(separator: ",")
        directory = nil
        self.hosts = hosts
        hostFolder = nil
    }

    /// A folder's subtree on a host of the shared index across hosts
    /// (`mdq --onlyin NAME:/path`). Given with other host scopes, a host
    /// given folders is searched in those folders, and a host named
    /// beside them (`hosts`, or every host with `allHosts`) whole, as the
    /// command does.
    public static func host(_ name: String, folder: FilePath) -> SearchScope {
        SearchScope(host: name, folder: folder)
    }

    private init(host: String, folder: FilePath) {
        rawValue = "mdq.host:" + host + ":" + folder.string
        directory = nil
        hosts = [host]
        hostFolder = folder
    }

    /// `<container>/Documents/**`.
    public static let ubiquitousDocuments = SearchScope("NSMetadataQueryUbiquitousDocumentsScope")
    /// `<container>/**` minus `<container>/Documents/**`.
    public static let ubiquitousData = SearchScope("NSMetadataQueryUbiquitousDataScope")
    /// The external document folders registered with the container
    /// (`UbiquityContainer.registerExternalDocuments(_:)`).
    public static let accessibleExternalDocuments = SearchScope(
        "NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope")
    /// `$HOME`.
    public static let userHome = SearchScope("NSMetadataQueryUserHomeScope")

    /// A folder's subtree (`mdfind -onlyin`).
    public static func directory(_ path: FilePath) -> SearchScope {
        SearchScope(directory: path)
    }

    private init(directory: FilePath) {
        rawValue = directory.string
        self.directory = directory
        hosts = nil
        hostFolder = nil
    }

    public var description: String { rawValue }
}
