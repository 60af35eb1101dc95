import CloudCodable
import CloudProtocol

/// The part of a `records/modify` that concerns shares: saving and ending
/// share records, roots naming their share, which hierarchy share covers
/// each saved record, a participant leaving, and the participants' shared
/// databases that hear of the write.
struct ShareModification: Sendable {
    let access: ZoneAccess
    let context: RequestContext
    let publicURL: String?

    /// The hierarchy share covering each saved record, by name.
    private(set) var membership: [ExactName: String] = [:]
    /// The shares the request saves, by share record name.
    private var saved: [ExactName: StoredShare] = [:]
    /// The shares the request ends, by share record name.
    private var ended: [ExactName: StoredShare] = [:]
    /// The shares a participant leaves, as they stand afterwards.
    private var left: [ExactName: StoredShare] = [:]
    /// The records the request saves, by name.
    private var savedRecords: [ExactName: Record] = [:]
    /// The stored rows read so far.
    private var rows: [ExactName: StoredRecord] = [:]
    /// The stored shares of the zone, by record name.
    private let stored: [ExactName: StoredShare]
    /// The holders of the addresses the saved shares invite, by normalized address.
    private var holders: [ExactName: String] = [:]

    init(access: ZoneAccess, context: RequestContext, publicURL: String?) {
        self.access = access
        self.context = context
        self.publicURL = publicURL
        stored = Dictionary(
            access.shares.map { (ExactName($0.recordName), $0) }, uniquingKeysWith: { first, _ in first })
    }

    private var owner: String { access.key.owner }
    private var isParticipant: Bool { access.view.participant != nil }

    // MARK: Planning

    mutating func plan(
        _ plans: inout [RecordModification.Plan], rows storedRows: [ExactName: StoredRecord],
        _ transaction: any StorageTransaction
    ) async throws {
        rows = storedRows
        for case .success(.save(let record, _)) in plans { savedRecords[ExactName(record.recordName)] = record }
        let touchesShares =
            !access.shares.isEmpty
            || savedRecords.values.contains { ShareRules.isShare($0.recordType) || $0.share != nil }
        // Without shares no record is covered by one, whatever its parent.
        guard touchesShares else { return }
        try await readParents(transaction)
        try await readHolders(transaction)
        planEnds(&plans)
        planShares(&plans)
        planRoots(&plans)
        planLeaves(&plans)
        for index in plans.indices {
            guard case .success(.save(let record, _)) = plans[index] else { continue }
            let name = ExactName(record.recordName)
            var visited = Set<ExactName>()
            if let key = shareKey(of: name, visited: &visited) { membership[name] = key }
            guard isParticipant else { continue }
            // An administrator's save of the share was checked by the share's rules.
            if ShareRules.isShare(record.recordType), saved[name] != nil { continue }
            guard access.view.permission(for: membership[name]) == .readWrite else {
                let isNew = rows[name]?.record == nil
                plans[index] = failure(
                    record.recordName,
                    isNew
                        ? "a new record in a share needs a parent inside a share the user may change"
                        : "a record cannot leave the share it is in", .accessDenied)
                continue
            }
        }
    }

    /// Reads who holds each address the saved shares invite: a new
    /// invitation by address is bound to its holder.
    private mutating func readHolders(_ transaction: any StorageTransaction) async throws {
        var addresses = Set<ExactName>()
        for record in savedRecords.values where ShareRules.isShare(record.recordType) {
            for participant in record.shareDetails?.participants ?? [] {
                if let address = participant.lookupInfo?.emailAddress.flatMap(EmailAddresses.normalized) {
                    addresses.insert(ExactName(address))
                }
            }
        }
        guard !addresses.isEmpty else { return }
        let users = try await transaction.users(
            withEmailAddresses: addresses.sorted().map(\.string), container: context.key.container)
        var found: [ExactName: [String]] = [:]
        for user in users {
            if let address = user.emailAddress { found[ExactName(address), default: []].append(user.recordName) }
        }
        // Several holders (impossible with the stores' unique index) bind to nobody.
        holders = found.compactMapValues { $0.count == 1 ? $0[0] : nil }
    }

    /// Reads the stored rows of the parents the saved records name (only
    /// their share matters: a stored row already says which covers it).
    private mutating func readParents(_ transaction: any StorageTransaction) async throws {
        var wanted = Set<ExactName>()
        for record in savedRecords.values {
            if let parent = record.parent { wanted.insert(ExactName(parent)) }
        }
        for share in access.shares { if let root = share.rootRecordName { wanted.insert(ExactName(root)) } }
        wanted.subtract(rows.keys)
        guard !wanted.isEmpty else { return }
        for row in try await transaction.records(named: wanted.sorted().map(\.string), inZone: access.zone.id) {
            rows[ExactName(row.name)] = row
        }
    }

    /// The owner's deletes of share records and of the roots of shares end those shares.
    private mutating func planEnds(_ plans: inout [RecordModification.Plan]) {
        guard !isParticipant else { return }
        for case .success(.delete(let name, _)) in plans {
            if let share = stored[ExactName(name)] { ended[ExactName(name)] = share }
            if let shareName = rows[ExactName(name)]?.record?.share, let share = stored[ExactName(shareName)] {
                ended[ExactName(shareName)] = share
            }
        }
    }

    /// Checks and completes each share record the owner saves.
    private mutating func planShares(_ plans: inout [RecordModification.Plan]) {
        for index in plans.indices {
            guard case .success(.save(var record, let desiredKeys)) = plans[index],
                ShareRules.isShare(record.recordType)
            else { continue }
            let name = ExactName(record.recordName)
            do {
                let share = try shareToSave(record)
                record.shareDetails = ShareDetails(
                    shortGUID: share.shortGUID, publicPermission: share.publicPermission,
                    participants: share.participants, owner: share.participants.first,
                    url: publicURL.map { "\($0)/share/\(share.shortGUID)" })
                saved[name] = share
                savedRecords[name] = record
                plans[index] = .success(.save(record, desiredKeys: desiredKeys))
            } catch let error as CloudError {
                var error = error
                error.recordName = record.recordName
                error.zoneID = context.key.scope == .shared ? access.zoneID : error.zoneID ?? access.zoneID
                plans[index] = .failure(error)
                savedRecords[name] = nil
            } catch {
                preconditionFailure("Internal inconsistency: share planning throws CloudError only")
            }
        }
    }

    private func shareToSave(_ record: Record) throws -> StoredShare {
        if let participant = access.view.participant {
            return try administratorsShare(record, by: participant)
        }
        guard context.key.scope == .private else {
            throw CloudError(.badRequest, reason: "shares live in the private database")
        }
        guard !access.zone.name.isExactly(ZoneID.defaultZone.zoneName) else {
            throw CloudError(.badRequest, reason: "shares live in a custom zone, not the default zone")
        }
        let name = record.recordName
        let previous = stored[ExactName(name)]
        let isZoneShare = name.isExactly(ShareDetails.zoneShareName)
        let others = access.shares.filter { !$0.recordName.isExactly(name) && ended[ExactName($0.recordName)] == nil }
        var root: String?
        if isZoneShare {
            guard !others.contains(where: { $0.rootRecordName != nil }) else {
                throw CloudError(
                    .alreadyShared, reason: "records of this zone are shared already; end those shares first")
            }
        } else {
            guard !others.contains(where: { $0.rootRecordName == nil }) else {
                throw CloudError(.alreadyShared, reason: "the whole zone is shared already")
            }
            root =
                previous?.rootRecordName
                ?? savedRecords.values.first { $0.share?.isExactly(name) ?? false }?.recordName
                ?? rows.values.first { $0.record?.share?.isExactly(name) ?? false }?.name
            guard let root else {
                throw CloudError(
                    .badRequest,
                    reason: "a share is saved with its root record, which names it in `share`, in the same request")
            }
            // The root's place without this share: inside another share's hierarchy, it cannot have its own.
            if let parent = savedRecords[ExactName(root)]?.parent ?? rows[ExactName(root)]?.parent {
                var visited: Set<ExactName> = [ExactName(root)]
                if let covering = shareKey(of: ExactName(parent), visited: &visited),
                    !(previous.map { covering.isExactly($0.shortGUID) } ?? false)
                {
                    throw CloudError(.alreadyShared, reason: "record '\(root)' is inside another share's hierarchy")
                }
            }
        }
        let details = record.shareDetails ?? ShareDetails()
        let participants = try ShareRules.participants(
            sent: details.participants, stored: previous, owner: owner, publicPermission: details.publicPermission,
            holders: holders)
        return StoredShare(
            shortGUID: previous?.shortGUID ?? ShareRules.makeShortGUID(), container: context.key.container,
            environment: context.key.environment, owner: owner, zone: access.zone.id, zoneName: access.zone.name,
            recordName: name, rootRecordName: root, publicPermission: details.publicPermission,
            participants: participants)
    }

    /// The share as an administrator saves it: participants added, removed
    /// or given another permission; the owner alone changes the public
    /// permission and who administers.
    private func administratorsShare(_ record: Record, by administrator: String) throws -> StoredShare {
        guard let previous = stored[ExactName(record.recordName)] else {
            throw CloudError(.accessDenied, reason: "only a zone's owner shares its records")
        }
        let details = record.shareDetails ?? ShareDetails()
        guard details.publicPermission == previous.publicPermission else {
            throw CloudError(.accessDenied, reason: "only the share's owner changes its public permission")
        }
        let participants = try ShareRules.participants(
            sent: details.participants, stored: previous, owner: owner, publicPermission: previous.publicPermission,
            holders: holders)
        let administrators = { (list: [ShareParticipant]) in
            list.filter { $0.role == .administrator }.map { [$0.participantID ?? "", $0.permission.rawValue] }
        }
        guard administrators(participants) == administrators(previous.participants) else {
            throw CloudError(.accessDenied, reason: "only the share's owner chooses its administrators")
        }
        var share = previous
        share.participants = participants
        return share
    }

    /// A record that names a share it did not name before must be that share's root.
    private mutating func planRoots(_ plans: inout [RecordModification.Plan]) {
        for index in plans.indices {
            guard case .success(.save(let record, _)) = plans[index], let shareName = record.share else { continue }
            let name = ExactName(record.recordName)
            if let before = rows[name]?.record?.share, before.isExactly(shareName) { continue }
            guard !isParticipant else {
                plans[index] = failure(record.recordName, "only a zone's owner shares its records", .accessDenied)
                continue
            }
            if let before = rows[name]?.record?.share, ended[ExactName(before)] == nil {
                plans[index] = failure(
                    record.recordName, "the record is the root of share '\(before)' already", .alreadyShared)
                continue
            }
            let share = saved[ExactName(shareName)] ?? stored[ExactName(shareName)]
            guard let share, share.rootRecordName?.isExactly(record.recordName) ?? false else {
                plans[index] = failure(
                    record.recordName,
                    "the record names share '\(shareName)', which is not saved with it as its root", .badRequest)
                continue
            }
        }
        // A root whose share failed fails too, and the other way round.
        for index in plans.indices {
            guard case .success(.save(let record, _)) = plans[index], let shareName = record.share,
                saved[ExactName(shareName)] == nil, stored[ExactName(shareName)] == nil
            else { continue }
            plans[index] = failure(record.recordName, "its share '\(shareName)' was not saved", .badRequest)
        }
        for index in plans.indices {
            guard case .success(.save(let record, _)) = plans[index], ShareRules.isShare(record.recordType),
                let root = saved[ExactName(record.recordName)]?.rootRecordName,
                stored[ExactName(record.recordName)] == nil
            else { continue }
            let rootSaved = plans.contains { plan in
                if case .success(.save(let other, _)) = plan { return other.recordName.isExactly(root) }
                return false
            }
            if !rootSaved, !(rows[ExactName(root)]?.record?.share?.isExactly(record.recordName) ?? false) {
                plans[index] = failure(record.recordName, "its root record '\(root)' was not saved", .badRequest)
                saved[ExactName(record.recordName)] = nil
            }
        }
    }

    /// A participant deleting a share record leaves the share.
    private mutating func planLeaves(_ plans: inout [RecordModification.Plan]) {
        guard let participant = access.view.participant else { return }
        for index in plans.indices {
            guard case .success(.leave(let name, _)) = plans[index], var share = stored[ExactName(name)],
                let entry = share.participants.firstIndex(where: {
                    $0.role != .owner && ($0.userRecordName?.isExactly(participant) ?? false)
                })
            else {
                if case .success(.leave(let name, _)) = plans[index] {
                    plans[index] = failure(name, "the user takes no part in this share", .accessDenied)
                }
                continue
            }
            share.participants[entry].acceptanceStatus = .removed
            left[ExactName(name)] = share
        }
    }

    /// The shortGUID of the hierarchy share that covers the record `name`
    /// once the request is applied, or `nil`.
    private func shareKey(of name: ExactName, visited: inout Set<ExactName>) -> String? {
        guard visited.insert(name).inserted else { return nil }
        if let key = membership[name] { return key }
        if let record = savedRecords[name] {
            if ShareRules.isShare(record.recordType) {
                return guid(ofShare: name)
            }
            if let share = record.share, let key = guid(ofShare: ExactName(share)) { return key }
            guard let parent = record.parent else { return nil }
            return shareKey(of: ExactName(parent), visited: &visited)
        }
        guard let row = rows[name], let record = row.record, let key = row.shareKey else { return nil }
        // A root whose share ends falls back to its parent's.
        if let share = record.share, ended[ExactName(share)] != nil {
            guard let parent = record.parent else { return nil }
            return shareKey(of: ExactName(parent), visited: &visited)
        }
        return ended.values.contains { $0.shortGUID.isExactly(key) } ? nil : key
    }

    private func guid(ofShare name: ExactName) -> String? {
        guard ended[name] == nil else { return nil }
        return (saved[name] ?? stored[name])?.shortGUID
    }

    private func failure(_ recordName: String, _ reason: String, _ code: CloudError.Code) -> RecordModification.Plan {
        .failure(CloudError(code, reason: reason, recordName: recordName, zoneID: access.zoneID))
    }

    // MARK: Applying

    /// After the request's own changes: ends shares (their roots forget
    /// them), records leaves in the share records, rewrites the rows whose
    /// covering share changed, and writes the shares' rows.
    mutating func finish(
        _ applier: inout Applier, leaves: Set<ExactName>, _ transaction: any StorageTransaction
    ) async throws {
        var roots: [ExactName] = []
        // Only what was applied counts: a plan may have failed after this planned it.
        let applied = applier.pending
        func isDeleted(_ name: String?) -> Bool {
            name.map { applied[ExactName($0)].map { $0.record == nil } ?? false } ?? false
        }
        for (name, share) in ended.sorted(by: { $0.key < $1.key }) {
            guard isDeleted(name.string) || isDeleted(share.rootRecordName) else { continue }
            if applier.pending[name] == nil || applier.pending[name]?.record != nil {
                try await applier.deleteCascading(name.string)
            }
            if let root = share.rootRecordName.map(ExactName.init), let row = try await applier.current(root),
                row.record != nil
            {
                var visited: Set<ExactName> = [root]
                let parentKey = row.record?.parent.flatMap { shareKey(of: ExactName($0), visited: &visited) }
                try await applier.rewrite(root) { $0.share = nil }
                applier.pending[root]?.formerShareKey = Applier.formerShareKey(before: row, after: parentKey)
                applier.pending[root]?.shareKey = parentKey
                roots.append(root)
            }
            try await transaction.deleteShare(recordName: name.string, inZone: access.zone.id)
        }
        for (name, share) in left.sorted(by: { $0.key < $1.key }) where leaves.contains(name) {
            try await applier.rewrite(name) { record in
                record.shareDetails?.participants = share.participants
            }
            try await transaction.saveShare(share)
        }
        for share in saved.values.sorted(by: { ExactName($0.recordName) < ExactName($1.recordName) })
        where applied[ExactName(share.recordName)]?.record != nil {
            try await transaction.saveShare(share)
        }
        for (name, row) in applied where row.record != nil && savedRecords[name] != nil {
            let before = rows[name].flatMap { $0.record != nil ? $0.shareKey : nil }
            let after = row.shareKey
            let isSame = after.map { key in before.map(key.isExactly) ?? false } ?? (before == nil)
            if !isSame || rows[name]?.record == nil { roots.append(name) }
        }
        guard !roots.isEmpty else { return }
        try await applier.propagateMembership(from: Array(Set(roots)).sorted())
    }

    /// Logs the write in the shared databases of the participants it
    /// concerns; returns them, to notify once committed.
    func logParticipants(_ written: some Collection<StoredRecord>, _ transaction: any StorageTransaction)
        async throws -> [DatabaseKey]
    {
        guard !access.shares.isEmpty || !saved.isEmpty else { return [] }
        var after: [StoredShare] = []
        for share in access.shares where ended[ExactName(share.recordName)] == nil {
            after.append(left[ExactName(share.recordName)] ?? saved[ExactName(share.recordName)] ?? share)
        }
        for share in saved.values where stored[ExactName(share.recordName)] == nil { after.append(share) }
        var keys = Set<ExactName>()
        for row in written {
            if let key = row.shareKey { keys.insert(ExactName(key)) }
            if let key = row.formerShareKey { keys.insert(ExactName(key)) }
        }
        let changedShares = Set(saved.keys).union(left.keys)
        let anyRow = !written.isEmpty
        return try await SharedDatabases.log(
            zoneName: access.zone.name, owner: owner, container: context.key.container,
            environment: context.key.environment, before: access.shares, after: after,
            touched: { share in
                share.rootRecordName == nil
                    ? anyRow
                    : keys.contains(ExactName(share.shortGUID)) || changedShares.contains(ExactName(share.recordName))
            }, transaction)
    }
}
