import ArgumentParser
import MDQDaemon
import MDQShared
import MetadataIndex

/// `mdq hosts`: every host of the shared index across hosts, with its
/// state, entries and last contact.
struct HostsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hosts",
        abstract: "List the hosts of the shared index across hosts: state, entries, last contact.",
        discussion: """
            The shared index is found at $MDQ_SHARED, else SHARED in /etc/mdq/system.conf. \
            A host is live while its publisher sends its changes (an idle one writes every 10 s), \
            catching up or reloading after it was away, offline once its publisher is gone \
            or has been silent for a minute: its entries are then as of its last contact, and searches mark them stale. \
            LAG is how long ago the oldest change of the host's index not yet in the shared index was made \
            (0 s: none was at its last write). WORDS says whether the host publishes its files' words \
            (its system index imports what is inside files, CONTENT): only those hosts' files are found by \
            kMDItemTextContent.
            """)

    @Flag(help: "One JSON object per host.")
    var json = false

    func run() throws {
        let hosts = try Self.hosts()
        var lines: [String] = []
        if json {
            for host in hosts {
                lines.append(String(decoding: host.json, as: UTF8.self))
            }
        } else {
            guard !hosts.isEmpty else {
                StandardOutput.print("no host publishes to the shared index yet (mdq system run --publish URL)")
                return
            }
            let width = max(4, hosts.map(\.name.count).max() ?? 0)
            func padded(_ text: String, _ width: Int) -> String {
                text + String(repeating: " ", count: max(0, width - text.count))
            }
            lines.append(
                padded("HOST", width) + "  " + padded("STATE", 12) + "  " + padded("ENTRIES", 10) + "  "
                    + padded("LAG", 8) + "  WORDS  LAST CONTACT")
            for host in hosts {
                var contact = host.secondsSinceContact.map { Self.ago($0) } ?? "never"
                if let error = host.lastError { contact += " (\(error))" }
                lines.append(
                    padded(host.name, width) + "  " + padded(host.state, 12) + "  " + padded(String(host.entries), 10)
                        + "  " + padded(host.lag.map(Self.duration) ?? "-", 8) + "  "
                        + padded(host.publishesWords ? "yes" : "no", 5) + "  " + contact)
            }
        }
        StandardOutput.print(lines.joined(separator: "\n"))
    }

    /// The hosts, read with the user's own configuration; without a
    /// credential of their own (`SHARED` alone, which their role may not
    /// reach), from the system index, which searches the shared index for
    /// its users (`SEARCH`) and needs no credential of theirs. A credential
    /// of their own ($MDQ_SHARED) that does not let them in is said.
    static func hosts() throws -> [SharedHost] {
        do {
            return try SharedIndexSettings.connect().hosts()
        } catch {
            if SharedIndexLocation.usersOwn == nil, let listed = try listedBySystemIndex() { return listed }
            if let error = error as? SharedIndexError {
                throw MetadataError.daemon(error.said)
            }
            throw SharedIndexSettings.withoutCredential(error)
        }
    }

    /// The hosts as the system index lists them; nil when none here
    /// searches the shared index.
    private static func listedBySystemIndex() throws -> [SharedHost]? {
        guard let client = try? DaemonClient.connectSystem(), (try? client.hello())?.features.contains("hosts") == true
        else { return nil }
        let listed = Result { () throws(MetadataError) in try client.sharedHosts() }
        // It does not search the shared index (no SEARCH).
        if case .failure(let refused) = listed, refused.refusal != nil { return nil }
        return try listed.get().compactMap(SharedHost.init(json:))
    }

    static func ago(_ seconds: Double) -> String {
        seconds < 1 ? "now" : duration(seconds) + " ago"
    }

    /// `12 s`, `3 min`, `5 h`, `2 days`.
    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<120: "\(Int(seconds)) s"
        case ..<7200: "\(Int(seconds / 60)) min"
        case ..<172_800: "\(Int(seconds / 3600)) h"
        default: "\(Int(seconds / 86400)) days"
        }
    }
}
