import ArgumentParser
import Foundation
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
            catching up or reloading after it was away, offline once it has been silent for a minute: \
            its entries are then as of its last contact, and searches mark them stale.
            """)

    @Flag(help: "One JSON object per host.")
    var json = false

    func run() throws {
        let hosts: [SharedHost]
        do {
            hosts = try SharedIndexSettings.connect().hosts()
        } catch let error as SharedIndexError {
            throw MetadataError.daemon("the shared index: \(error.message)")
        }
        var lines: [String] = []
        if json {
            for host in hosts {
                var object: [String: Any] = [
                    "name": host.name, "state": host.state, "entries": host.entries, "sequence": host.sequence,
                    "generation": host.generation, "domain": host.domain,
                ]
                object["lastContact"] = host.lastContact
                object["secondsSinceContact"] = host.secondsSinceContact
                object["lastError"] = host.lastError
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                lines.append(String(decoding: data, as: UTF8.self))
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
                padded("HOST", width) + "  " + padded("STATE", 12) + "  " + padded("ENTRIES", 10) + "  LAST CONTACT")
            for host in hosts {
                var contact = host.secondsSinceContact.map { Self.ago($0) } ?? "never"
                if let error = host.lastError { contact += " (\(error))" }
                lines.append(
                    padded(host.name, width) + "  " + padded(host.state, 12) + "  " + padded(String(host.entries), 10)
                        + "  " + contact)
            }
        }
        StandardOutput.print(lines.joined(separator: "\n"))
    }

    static func ago(_ seconds: Double) -> String {
        switch seconds {
        case ..<1: "now"
        case ..<120: "\(Int(seconds)) s ago"
        case ..<7200: "\(Int(seconds / 60)) min ago"
        case ..<172_800: "\(Int(seconds / 3600)) h ago"
        default: "\(Int(seconds / 86400)) days ago"
        }
    }
}
