import MetadataIndex

extension MetadataError {
    /// A setting of an `NSMetadataQuery`, or an `NSPredicate` or
    /// `NSSortDescriptor` given to one, that mdq cannot carry out
    /// (`.invalidArgument`; `message` says what and what to use instead).
    static func unsupported(_ message: String) -> MetadataError {
        .invalidArgument(message)
    }
}
