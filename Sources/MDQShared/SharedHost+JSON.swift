package import MDQWire

extension SharedHost {
    /// The host as `mdq hosts --json` prints it, and as the system index
    /// sends it to the command (`hosts` in the daemon protocol): one JSON
    /// object, its keys sorted, those without a value left out.
    package var json: [UInt8] {
        var out = JSONWriter()
        out.raw("{")
        out.key("domain")
        out.string(domain)
        out.field("entries")
        out.integer(entries)
        out.field("generation")
        out.integer(generation)
        if let lag {
            out.field("lag")
            out.double(lag)
        }
        if let lastContact {
            out.field("lastContact")
            out.string(lastContact)
        }
        if let lastError {
            out.field("lastError")
            out.string(lastError)
        }
        out.field("name")
        out.string(name)
        if let secondsSinceContact {
            out.field("secondsSinceContact")
            out.double(secondsSinceContact)
        }
        out.field("sequence")
        out.integer(sequence)
        out.field("state")
        out.string(state)
        out.field("words")
        out.bool(publishesWords)
        out.raw("}")
        return out.bytes
    }

    /// A host as `json` writes it (its number and cursors, which a
    /// listing leaves out, as 0).
    package init?(json: JSONValue) {
        guard let name = json["name"]?.string, let state = json["state"]?.string else { return nil }
        self.init(
            id: 0, name: name, state: state, entries: Int(json["entries"]?.integer ?? 0),
            sequence: json["sequence"]?.integer ?? 0, generation: json["generation"]?.integer ?? 0,
            lastContact: json["lastContact"]?.string, secondsSinceContact: json["secondsSinceContact"]?.double,
            lastError: json["lastError"]?.string, domain: json["domain"]?.string ?? "default",
            lag: json["lag"]?.double, publishesWords: json["words"]?.bool ?? false)
    }
}
