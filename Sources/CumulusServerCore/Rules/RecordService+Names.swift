import CloudCodable
import CloudProtocol

extension RecordService {
    /// Gives a user the name other users see (``UserNames``), or takes it
    /// away (`nil`): in lookups that may return the user, and in the shares
    /// they own or joined.
    ///
    /// - Returns: `false` when the container has no such user.
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a name ``UserNames/checked(_:)`` refuses.
    public func setName(_ name: UserNameComponents?, forUser recordName: String, container: String) async throws
        -> Bool
    {
        try NameRules.check(recordName, "the user's record name")
        try NameRules.check(container, "the container name")
        let checked = try UserNames.checked(name)
        return try await storage.write { transaction in
            try await transaction.setUserName(checked, recordName: recordName, container: container)
        }
    }

    /// The answer with the names its share records and share metadata may
    /// show to `viewer` (see ``UserNames``), read in one transaction; the
    /// names stored in a share record or sent by a client never show. A
    /// share record its owner reads shows no user an invitation by address
    /// is bound to (``ShareRules/hidingBindings(_:from:)``), in the changes
    /// feed as everywhere.
    func presentingNames(_ answer: ServiceAnswer, viewer: String?, container: String) async throws -> ServiceAnswer {
        guard answer.containsRecord(where: { ShareRules.isShare($0.recordType) }, encoded: UserNames.mayBeShare)
        else { return answer }
        var wanted = Set<ExactName>()
        // Decodes the stored share records once; the second pass finds them decoded.
        let decoded = try answer.mappingRecords(decoding: UserNames.mayBeShare) { record in
            for user in UserNames.shown(in: record, to: viewer) { wanted.insert(ExactName(user)) }
            return record
        }
        if case .response(.shares(let results)) = decoded.form {
            for case .share(let metadata) in results { wanted.insert(ExactName(metadata.ownerIdentity.userRecordName)) }
        }
        let names = try await self.names(of: wanted, container: container)
        // The share records are decoded now: nothing is left to decode.
        let named = try decoded.mappingRecords(
            decoding: { _ in false },
            { UserNames.presented(ShareRules.hidingBindings($0, from: viewer), to: viewer, names: names) })
        guard case .response(.shares(let results)) = named.form else { return named }
        return ServiceAnswer(
            .shares(
                results.map { result in
                    guard case .share(var metadata) = result else { return result }
                    metadata.ownerIdentity.nameComponents = names[ExactName(metadata.ownerIdentity.userRecordName)]
                    return .share(metadata)
                }))
    }

    /// The names of the users of a container that have one.
    func names(of users: Set<ExactName>, container: String) async throws -> [ExactName: UserNameComponents] {
        guard !users.isEmpty else { return [:] }
        let rows = try await storage.read { transaction in
            try await transaction.users(withRecordNames: users.sorted().map(\.string), container: container)
        }
        var names: [ExactName: UserNameComponents] = [:]
        for row in rows { if let name = row.nameComponents { names[ExactName(row.recordName)] = name } }
        return names
    }
}

extension UserNames {
    /// The users whose names a share record shows to `viewer`: its owner
    /// to anyone who reads it; the participants who joined to its owner and
    /// to the other participants who joined (someone holding the URL who
    /// has not accepted sees the owner's name and their own). Empty for a
    /// record of another type.
    static func shown(in record: Record, to viewer: String?) -> [String] {
        guard ShareRules.isShare(record.recordType), let details = record.shareDetails else { return [] }
        func isViewer(_ participant: ShareParticipant) -> Bool {
            guard let viewer, let user = participant.userRecordName else { return false }
            return user.isExactly(viewer)
        }
        // The stored list: the owner, and the participants who joined by their record name.
        let isMember = details.participants.contains(where: isViewer)
        let everyone = details.participants + [details.owner, details.currentUserParticipant].compactMap { $0 }
        return everyone.compactMap { participant in
            guard let user = participant.userRecordName, participant.role == .owner || isMember || isViewer(participant)
            else { return nil }
            return user
        }
    }

    /// A share record with the names ``shown(in:to:)`` allows, from
    /// `names`, and no other: a name the record held is dropped.
    static func presented(_ record: Record, to viewer: String?, names: [ExactName: UserNameComponents]) -> Record {
        guard ShareRules.isShare(record.recordType), var details = record.shareDetails else { return record }
        let allowed = Set(shown(in: record, to: viewer).map(ExactName.init))
        func named(_ participant: ShareParticipant) -> ShareParticipant {
            var named = participant
            named.nameComponents = participant.userRecordName.flatMap { user in
                allowed.contains(ExactName(user)) ? names[ExactName(user)] : nil
            }
            return named
        }
        details.participants = details.participants.map(named)
        details.owner = details.owner.map(named)
        details.currentUserParticipant = details.currentUserParticipant.map(named)
        var presented = record
        presented.shareDetails = details
        return presented
    }

    /// Whether a record's wire form may be a share record: it holds the
    /// share record type as a string.
    static func mayBeShare(_ bytes: [UInt8]) -> Bool {
        WireBytes.contain(#""cloudkit.share""#, in: bytes)
    }
}
