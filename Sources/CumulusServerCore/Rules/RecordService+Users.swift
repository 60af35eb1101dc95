import CloudCodable
import CloudProtocol

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

/// What giving a user an address did: the rule of who holds an address.
public enum EmailAssignment: Sendable, Hashable {
    /// The user holds the address now (or holds none, when it was taken away).
    case assigned
    /// The container has no such user.
    case unknownUser
    /// Another user of the container holds the address: it stays theirs,
    /// and the user keeps what they had.
    case heldByAnotherUser
}

extension EmailAddresses {
    /// Gives `recordName` the (normalized) `address`, or takes their
    /// address away (`nil`), following the one rule of who holds an
    /// address: an address belongs to at most one user of a container, the
    /// first who holds it, until it is taken from them (their address
    /// changed or removed, or the user removed). A later claim, by the
    /// operator or by an identity token that says the address is verified,
    /// neither takes it over nor shares it. Both stores back this with a
    /// unique index, so that two servers' concurrent claims cannot both win.
    public static func assign(
        _ address: String?, discoverable: Bool, to recordName: String, container: String,
        in transaction: any StorageTransaction
    ) async throws -> EmailAssignment {
        if let address {
            let holders = try await transaction.users(withEmailAddresses: [address], container: container)
            if holders.contains(where: { !$0.recordName.isExactly(recordName) }) { return .heldByAnotherUser }
        }
        let known = try await transaction.setUserEmail(
            address, discoverable: discoverable, recordName: recordName, container: container)
        return known ? .assigned : .unknownUser
    }
}

extension RecordService {
    /// Gives a user an email address by which other users of the container
    /// find them, or takes it away (`nil`); `discoverable: false` keeps the
    /// address for invitations but out of lookups. An address another user
    /// holds stays theirs (see ``EmailAddresses/assign(_:discoverable:to:container:in:)``).
    ///
    /// - Returns: `false` when the container has no such user.
    /// - Throws: ``CloudError``: `BAD_REQUEST` for text that is not an email
    ///   address; `EXISTS` when another user of the container holds it.
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
        let outcome = try await storage.write { transaction in
            try await EmailAddresses.assign(
                stored, discoverable: discoverable, to: recordName, container: container, in: transaction)
        }
        switch outcome {
        case .assigned: return true
        case .unknownUser: return false
        case .heldByAnotherUser:
            throw CloudError(.exists, reason: "another user of the container holds the address '\(stored ?? "")'")
        }
    }
}
