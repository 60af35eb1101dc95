import CloudCodable

extension CloudError {
    /// The error dictionary of a request that failed as a whole:
    /// `{serverErrorCode, reason, retryAfter?, uuid?}`, with the record, zone
    /// and server record the error is about when it names them.
    public func encodedBody() -> [UInt8] {
        var writer = JSONWriter(capacity: 128 + reason.utf8.count)
        writer.append(byte: UInt8(ascii: "{"))
        do {
            try writer.appendErrorMembers(self, afterMember: false)
        } catch {
            // Only the server record can fail to be written; leave it out.
            var plain = self
            plain.serverRecord = nil
            writer = JSONWriter(capacity: 128 + reason.utf8.count)
            writer.append(byte: UInt8(ascii: "{"))
            try? writer.appendErrorMembers(plain, afterMember: false)
        }
        writer.append(byte: UInt8(ascii: "}"))
        return writer.bytes
    }
}
