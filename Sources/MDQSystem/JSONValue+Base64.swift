import Foundation
package import MDQWire

extension JSONWriter {
    /// A string field with a `…Base64` twin when the bytes are not UTF-8.
    package mutating func bytesField(_ name: StaticString, _ value: [UInt8]) {
        key(name)
        if !string(value) {
            bytes.append(UInt8(ascii: ","))
            bytes.append(UInt8(ascii: "\""))
            raw(name)
            raw("Base64\":\"")
            bytes.append(contentsOf: Array(Data(value).base64EncodedString().utf8))
            bytes.append(UInt8(ascii: "\""))
        }
    }
}

extension JSONValue {
    /// A field that may carry bytes that are not UTF-8: its `…Base64` twin
    /// when present, else the string.
    package func bytesField(_ name: String) -> [UInt8]? {
        if let encoded = self[name + "Base64"]?.string, let data = Data(base64Encoded: encoded) { return Array(data) }
        return self[name]?.bytes
    }
}
