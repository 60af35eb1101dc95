import Cumulus

/// Email addresses as users are found by them.
public enum EmailAddresses {
    /// The form an address is stored and looked up in: ASCII letters
    /// lowercased, everything else kept as its bytes. `nil` for text that
    /// is not an address (no `@` between two non-empty parts, spaces,
    /// control characters or more than 254 bytes).
    public static func normalized(_ address: String) -> String? {
        let bytes = Array(address.utf8)
        guard bytes.count <= 254, let at = bytes.lastIndex(of: UInt8(ascii: "@")), at > 0, at < bytes.count - 1,
            !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else { return nil }
        let lowered = bytes.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
        return String(decoding: lowered, as: UTF8.self)
    }
}

extension RecordService {
    /// Gives a user an email address by which other users of the container
    /// find them, or takes it away (`nil`); `discoverable: false` keeps the
    /// address for invitations but out of lookups.
    ///
    /// - Returns: `false` when the container has no such user.
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for text that is not an email address.
    public func setEmailAddress(
        _ address: String?, discoverable: Bool, forUser recordName: String, container: String
    ) async throws -> Bool {
        var normalized: String?
        if let address {
            guard let valid = EmailAddresses.normalized(address) else {
                throw CloudError(.badRequest, reason: "'\(address)' is not an email address")
            }
            normalized = valid
        }
        let stored = normalized
        return try await storage.write { transaction in
            try await transaction.setUserEmail(
                stored, discoverable: discoverable, recordName: recordName, container: container)
        }
    }
}
