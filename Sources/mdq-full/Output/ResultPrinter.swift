import MetadataIndex

/// How a one-shot search prints each result: its path and a newline or
/// NUL, or a JSON object per line.
///
/// `format` runs on the crawler threads, each into its own buffer
/// (`OneShotSearch.run(formattingWith:write:)`), so printing a million
/// results is spread over every core; the buffers reach stdout whole,
/// through `StandardOutput`.
enum ResultPrinter {
    enum Format {
        case lines
        case nullTerminated
        case json
    }

    /// The function that appends one result in `format`.
    static func formatter(_ format: Format) -> @Sendable (SearchResult, inout [UInt8]) -> Void {
        switch format {
        case .lines:
            return { result, out in
                out.append(contentsOf: result.pathBytes)
                out.append(0x0A)
            }
        case .nullTerminated:
            return { result, out in
                out.append(contentsOf: result.pathBytes)
                out.append(0)
            }
        case .json:
            return { result, out in JSONLine.append(result, to: &out) }
        }
    }
}
