import CloudCodable
import CloudProtocol

extension RecordService {
    /// `records/resolve` and `records/accept`: each share as the caller may
    /// see it, and, accepting, the caller made an accepted participant.
    func resolveShares(_ lookups: [ShareLookup], accepting: Bool, context: RequestContext) async throws
        -> [ShareResult]
    {
        let user = try Self.publicUser(context, accepting ? "records/accept" : "records/resolve")
        try ServerLimits.checkItemCount(lookups.count, of: "shares")
        var results: [ShareResult] = []
        var notices: [(DatabaseKey, String, [StoredSubscription])] = []
        for lookup in lookups {
            do {
                let (metadata, written) = try await resolveShare(lookup, user: user, accepting: accepting, context)
                results.append(.share(metadata))
                notices += written
            } catch let error as CloudError {
                results.append(.failure(shortGUID: lookup.shortGUID, error))
            }
        }
        for (key, zoneName, subscriptions) in notices {
            notify(key, changedZones: [zoneName], subscriptions: subscriptions)
        }
        return results
    }

    private func resolveShare(_ lookup: ShareLookup, user: String, accepting: Bool, _ context: RequestContext)
        async throws -> (ShareMetadata, [(DatabaseKey, String, [StoredSubscription])])
    {
        let key = context.key
        let body:
            @Sendable (any StorageTransaction) async throws -> (
                ShareMetadata, [(DatabaseKey, String, [StoredSubscription])]
            ) = { transaction in
                guard let found = try await transaction.share(shortGUID: lookup.shortGUID),
                    found.container.isExactly(key.container), found.environment == key.environment
                else {
                    throw CloudError(.notFound, reason: "no share has the handle '\(lookup.shortGUID)'")
                }
                var share = found
                let ownerKey = DatabaseKey(
                    container: key.container, environment: key.environment, scope: .private, owner: share.owner)
                let email = try await transaction.users(withRecordNames: [user], container: key.container).first?
                    .emailAddress
                let isOwner = share.owner.isExactly(user)
                var participant: ShareParticipant
                if isOwner {
                    participant = ShareRules.ownerParticipant(user)
                } else if let index = ShareRules.participantIndex(of: user, emailAddress: email, in: share.participants)
                {
                    participant = share.participants[index]
                    if accepting, participant.acceptanceStatus != .accepted {
                        participant.acceptanceStatus = .accepted
                        participant.userRecordName = user
                        share.participants[index] = participant
                    }
                } else if share.publicPermission != .none {
                    participant = ShareParticipant(
                        participantID: ShareRules.makeParticipantID(), userRecordName: user,
                        lookupInfo: UserLookupInfo(userRecordName: user), role: .publicUser,
                        acceptanceStatus: accepting ? .accepted : .unknown, permission: share.publicPermission)
                    if accepting {
                        guard share.participants.count < ShareDetails.participantLimit else {
                            throw CloudError(
                                .badRequest,
                                reason: "the share has \(ShareDetails.participantLimit) participants, its limit")
                        }
                        share.participants.append(participant)
                    }
                } else {
                    throw CloudError(.accessDenied, reason: "the share is not shared with this user")
                }
                var notices: [(DatabaseKey, String, [StoredSubscription])] = []
                if share != found {
                    guard var database = try await transaction.database(ownerKey),
                        let zone = try await transaction.zones(inDatabase: database.id, named: [share.zoneName]).first
                    else { throw CloudError(.notFound, reason: "no share has the handle '\(lookup.shortGUID)'") }
                    let before = try await transaction.shares(inZone: zone.id)
                    try await transaction.saveShare(share)
                    var applier = Applier(zone: zone, rows: [:], transaction: transaction)
                    let participants = share.participants
                    try await applier.rewrite(ExactName(share.recordName)) { record in
                        record.shareDetails?.participants = participants
                    }
                    try await applier.commit(in: &database, at: ServerTime.milliseconds(self.now()))
                    let after = before.map { $0.shortGUID.isExactly(share.shortGUID) ? share : $0 }
                    let shared = try await SharedDatabases.log(
                        zoneName: share.zoneName, owner: share.owner, container: key.container,
                        environment: key.environment, before: before, after: after,
                        touched: { $0.shortGUID.isExactly(share.shortGUID) }, transaction)
                    notices.append(
                        (
                            ownerKey, share.zoneName,
                            try await transaction.subscriptions(inDatabase: database.id, user: nil)
                        ))
                    notices += shared.map { ($0, share.zoneName, []) }
                }
                let metadata = try await Self.metadata(
                    share, lookup: lookup, participant: participant, viewer: user, key: key, transaction)
                return (metadata, notices)
            }
        return try await accepting ? storage.write(body) : storage.read(body)
    }

    private static func metadata(
        _ share: StoredShare, lookup: ShareLookup, participant: ShareParticipant, viewer: String, key: DatabaseKey,
        _ transaction: any StorageTransaction
    ) async throws -> ShareMetadata {
        var names = [share.recordName]
        if lookup.fetchRootRecord, let root = share.rootRecordName { names.append(root) }
        var records: [ExactName: Record] = [:]
        for row in try await transaction.records(named: names, inZone: share.zone) {
            if let record = row.record { records[ExactName(row.name)] = record }
        }
        let zoneID = ZoneID(zoneName: share.zoneName, ownerRecordName: share.owner)
        func present(_ record: Record) -> Record {
            var presented = ShareRules.presented(record, to: viewer, owner: share.owner)
            presented.zoneID = zoneID
            presented.metadata?.zoneID = zoneID
            return presented
        }
        guard let shareRecord = records[ExactName(share.recordName)] else {
            throw CloudError(.internalError, reason: "the share's record is missing")
        }
        var presentedShare = present(shareRecord)
        if presentedShare.shareDetails?.currentUserParticipant == nil {
            presentedShare.shareDetails?.currentUserParticipant = participant
        }
        let root = share.rootRecordName.flatMap { records[ExactName($0)] }.map {
            present($0).keeping(lookup.rootRecordDesiredKeys)
        }
        return ShareMetadata(
            shortGUID: share.shortGUID, containerIdentifier: key.container, environment: key.environment,
            databaseScope: .shared, zoneID: zoneID, share: presentedShare, rootRecord: root,
            ownerIdentity: UserIdentity(userRecordName: share.owner), participantRole: participant.role,
            participantStatus: participant.acceptanceStatus, participantPermission: participant.permission)
    }

    /// `users/lookup/email`, `users/lookup/id` and `users/discover`: the
    /// discoverable users of the caller's container that the lookup infos
    /// name, each once, in the order asked, with their names
    /// (``UserNames``). An address is answered only to the caller who asked by it.
    func lookupUsers(_ infos: [UserLookupInfo], context: RequestContext, operation: String) async throws
        -> [UserIdentity]
    {
        _ = try Self.publicUser(context, operation)
        try ServerLimits.checkItemCount(infos.count, of: "users")
        let container = context.key.container
        let addresses = infos.compactMap { $0.emailAddress.flatMap(EmailAddresses.normalized) }
        let names = infos.compactMap(\.userRecordName)
        let (byEmail, byName) = try await storage.read { transaction in
            (
                try await transaction.users(withEmailAddresses: addresses, container: container),
                try await transaction.users(withRecordNames: names, container: container)
            )
        }
        // An address has one holder (the stores' unique index); should a
        // store ever answer several, the address finds nobody, so that no
        // answer depends on the order rows come in.
        var holders: [ExactName: [StoredUser]] = [:]
        for user in byEmail {
            if let address = user.emailAddress { holders[ExactName(address), default: []].append(user) }
        }
        let emails = holders.compactMapValues { users in
            users.count == 1 && users[0].isDiscoverable ? users[0] : nil
        }
        var records: [ExactName: StoredUser] = [:]
        for user in byName where user.isDiscoverable { records[ExactName(user.recordName)] = user }
        var answered = Set<ExactName>()
        var found: [UserIdentity] = []
        for info in infos {
            if let address = info.emailAddress.flatMap(EmailAddresses.normalized),
                let user = emails[ExactName(address)],
                answered.insert(ExactName(user.recordName)).inserted
            {
                found.append(
                    UserIdentity(
                        userRecordName: user.recordName, lookupInfo: UserLookupInfo(emailAddress: address),
                        nameComponents: user.nameComponents))
            } else if let name = info.userRecordName, let user = records[ExactName(name)],
                answered.insert(ExactName(user.recordName)).inserted
            {
                found.append(
                    UserIdentity(
                        userRecordName: user.recordName, lookupInfo: UserLookupInfo(userRecordName: name),
                        nameComponents: user.nameComponents))
            }
        }
        return found
    }

    /// The signed-in user of a request that goes to the public database's path.
    private static func publicUser(_ context: RequestContext, _ operation: String) throws -> String {
        guard context.key.scope == .public else {
            throw CloudError(.badRequest, reason: "\(operation) goes to the public database's path")
        }
        guard let user = context.user else {
            throw CloudError(.authenticationRequired, reason: "\(operation) needs a signed-in user")
        }
        return user
    }
}
