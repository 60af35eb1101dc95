import CloudCodable
import CloudProtocol
import Foundation

/// What a `records/modify` transaction did.
struct ModifyOutcome: Sendable {
    var results: [RecordResult]
    /// The zone that changed, if any operation went through.
    var changedZone: String?
    /// The database's subscriptions, for the notifications.
    var subscriptions: [StoredSubscription] = []
    /// The query subscriptions' notifications of the write.
    var queryNotifications: [StoredQueryNotification] = []
    /// Field types the schema did not have.
    var newFieldTypes: [StoredFieldType] = []
    /// The database that owns the zone (the owner's, for a write through the shared database).
    var key: DatabaseKey? = nil
    /// The participants' shared databases whose zone history the write changed.
    var sharedDatabases: [DatabaseKey] = []
}

/// A write that gave a field another type than the one storage holds; the
/// service reloads its schema from `stored` and answers `error`.
struct SchemaConflict: Error {
    /// Every field type of the environment, as stored.
    var stored: [StoredFieldType]
    /// What the request answers.
    var error: CloudError
}

/// One `records/modify` request carried out inside a transaction: plan every
/// operation against the zone as it stands, check references, then apply in
/// order (atomically in custom zones when asked) with serials taken from the
/// zone's row.
struct RecordModification: Sendable {
    var operations: [RecordOperation]
    var requestZoneID: ZoneID
    var atomic: Bool
    var context: RequestContext
    var recordSizeLimit: Int
    var schema: Schema
    var now: Date
    /// The base of share URLs, if any.
    var publicURL: String?
    /// Query notifications logged before this (milliseconds since 1970)
    /// are deleted when the write logs its own.
    var queryNotificationCutoff: Int64

    enum Change: Sendable {
        case save(Record, desiredKeys: [String]?)
        case delete(String, zoneID: ZoneID)
        /// A participant deletes a share record from its shared database: it leaves the share.
        case leave(String, zoneID: ZoneID)
    }

    typealias Plan = Result<Change, CloudError>

    func run(_ transaction: any StorageTransaction) async throws -> ModifyOutcome {
        if context.key.scope != .shared, try await transaction.database(context.key) == nil {
            throw CloudError(.internalError, reason: "the database has no row")
        }
        guard let access = try await ZoneAccess.open(requestZoneID, context: context, readingShares: true, transaction)
        else {
            return ModifyOutcome(
                results: operations.map {
                    .failure(ServerLimits.zoneNotFound(requestZoneID, recordName: $0.record.recordName))
                })
        }
        var database = access.database
        let zone = access.zone
        let zoneName = zone.name
        // Writes through a share count toward the owner's storage.
        let quotaUser = context.key.scope == .shared ? access.key.owner : context.user
        var quotaExceeded = false
        if let quotaUser {
            quotaExceeded = try await transaction.isQuotaExceeded(
                user: quotaUser, container: context.key.container, environment: context.key.environment)
        }
        let names = operations.map(\.record.recordName).filter { !$0.isEmpty }
        var rows: [ExactName: StoredRecord] = [:]
        for row in try await transaction.records(named: names, inZone: zone.id) { rows[ExactName(row.name)] = row }

        let stamp = RecordStamp(date: now, userRecordName: context.user)
        let receipts = try await AssetReceipts.load(for: operations, transaction)
        var plans = operations.map { operation in
            plan(
                operation, existing: rows[ExactName(operation.record.recordName)], access: access, stamp: stamp,
                quotaExceeded: quotaExceeded, receipts: receipts)
        }
        var sharing = ShareModification(access: access, context: context, publicURL: publicURL)
        try await sharing.plan(&plans, rows: rows, transaction)
        try await validateReferences(&plans, access: access, rows: rows, transaction)

        // In the default zone a request is never atomic (CloudKit's atomic
        // commits need a custom zone).
        let isAtomic = atomic && zoneName != ZoneID.defaultZone.zoneName
        if isAtomic, plans.contains(where: { (try? $0.get()) == nil }) {
            return ModifyOutcome(
                results: zip(operations, plans).map { operation, plan in
                    if case .failure(let error) = plan { return .failure(error) }
                    return .failure(
                        CloudError(
                            .atomicError, reason: "another operation of this atomic request failed",
                            recordName: operation.record.recordName, zoneID: requestZoneID))
                })
        }

        var applier = Applier(zone: zone, rows: rows, transaction: transaction)
        applier.membership = sharing.membership
        var results: [RecordResult] = []
        var leaves = Set<ExactName>()
        var newFieldTypes: [ExactName: [ExactName: StoredFieldType]] = [:]
        for plan in plans {
            switch plan {
            case .failure(let error): results.append(.failure(error))
            case .success(.save(let record, let desiredKeys)):
                // A live record keeps its creator; a new one (or one over a tombstone) is the writer's.
                let existing = rows[ExactName(record.recordName)].flatMap { $0.record != nil ? $0 : nil }
                let saved = try await applier.save(record, creator: existing.map { $0.creator } ?? context.user)
                results.append(.record(access.present(saved, to: context.user).keeping(desiredKeys)))
                // An empty list says nothing of which list it is: it teaches no type.
                let fields = saved.fields
                for position in fields.indices where !fields.isEmptyList(at: position) {
                    let field = fields.name(at: position)
                    guard schema.type(ofField: field, in: saved.recordType) == nil else { continue }
                    newFieldTypes[ExactName(saved.recordType), default: [:]][ExactName(field)] =
                        newFieldTypes[ExactName(saved.recordType)]?[ExactName(field)]
                        ?? StoredFieldType(
                            recordType: saved.recordType, fieldName: field, type: fields.type(at: position))
                }
            case .success(.delete(let name, let zoneID)):
                try await applier.deleteCascading(name)
                results.append(.deleted(recordName: name, zoneID: zoneID))
            case .success(.leave(let name, let zoneID)):
                leaves.insert(ExactName(name))
                results.append(.deleted(recordName: name, zoneID: zoneID))
            }
        }
        try await sharing.finish(&applier, leaves: leaves, transaction)
        guard !applier.pending.isEmpty else {
            return ModifyOutcome(results: results)
        }
        let origin = try await writingChannel(access, applier, transaction)
        try await applier.commit(in: &database, at: ServerTime.milliseconds(now), origin: origin)
        let subscriptions = try await transaction.subscriptions(inDatabase: database.id, user: nil)
        let queryNotifications = try await logQueryNotifications(
            of: applier, in: database, key: access.key, subscriptions: subscriptions, transaction)
        let types = newFieldTypes.values.flatMap(\.values).sorted {
            (ExactName($0.recordType), ExactName($0.fieldName)) < (ExactName($1.recordType), ExactName($1.fieldName))
        }
        try await transaction.addFieldTypes(
            types, container: context.key.container, environment: context.key.environment)
        try await checkStoredTypes(of: types, transaction)
        let sharedDatabases = try await sharing.logParticipants(applier.pending.values, transaction)
        return ModifyOutcome(
            results: results, changedZone: zoneName, subscriptions: subscriptions,
            queryNotifications: queryNotifications, newFieldTypes: types, key: access.key,
            sharedDatabases: sharedDatabases)
    }

    /// The hash of the channel the request named, if it is the caller's own
    /// channel on the database the write changes: a channel of another
    /// user or database (or none) leaves the write heard by every poll.
    ///
    /// A write that changed records beyond those its operations name (a
    /// cascade of `DELETE_SELF`, a share's records moved) has no origin:
    /// its answer does not tell the writer everything it changed.
    func writingChannel(_ access: ZoneAccess, _ applier: Applier, _ transaction: any StorageTransaction)
        async throws -> String?
    {
        let named = Set(operations.map { ExactName($0.record.recordName) })
        guard applier.pending.keys.allSatisfy(named.contains) else { return nil }
        guard let hash = context.channelHash, access.key == context.key,
            let channel = try await transaction.channel(tokenHash: hash),
            channel.key == context.key, channel.user.isExactly(context.subscriber)
        else { return nil }
        return hash
    }

    /// Keeps what the committed changes fire of the database's query
    /// subscriptions, with the write's serial, and returns it.
    private func logQueryNotifications(
        of applier: Applier, in database: StoredDatabase, key: DatabaseKey, subscriptions: [StoredSubscription],
        _ transaction: any StorageTransaction
    ) async throws -> [StoredQueryNotification] {
        let notifications = QuerySubscriptions.notifications(
            of: applier.pending.values.map { (applier.rows[ExactName($0.name)], $0) }, zoneName: applier.zone.name,
            key: key, subscriptions: subscriptions, serial: database.serial, logged: ServerTime.milliseconds(now))
        guard !notifications.isEmpty else { return [] }
        try await transaction.deleteQueryNotifications(loggedBefore: queryNotificationCutoff)
        try await transaction.logQueryNotifications(notifications, inDatabase: database.id)
        return notifications
    }

    /// Throws ``SchemaConflict`` when a field this request typed first has
    /// another type in storage: another server wrote it first meanwhile, so
    /// this server's schema was out of date.
    private func checkStoredTypes(of types: [StoredFieldType], _ transaction: any StorageTransaction) async throws {
        guard !types.isEmpty else { return }
        let stored = try await transaction.fieldTypes(
            container: context.key.container, environment: context.key.environment)
        let storedTypes = Schema(stored)
        for type in types {
            if let first = storedTypes.type(ofField: type.fieldName, in: type.recordType), first != type.type {
                throw SchemaConflict(
                    stored: stored,
                    error: CloudError(
                        .badRequest,
                        reason: "field '\(type.fieldName)' of record type '\(type.recordType)' is a "
                            + "\(first.rawValue), not a \(type.type.rawValue)",
                        zoneID: requestZoneID))
            }
        }
    }

    /// Why a record's fields may not be saved in the zone of `access` for
    /// their references, or `nil`: a reference stays in its record's zone
    /// (it names no zone, or that one), as CloudKit's do.
    private static func crossZoneReference(in fields: RecordFields, access: ZoneAccess, context: RequestContext)
        -> String?
    {
        for (field, reference) in fields.references {
            guard let zoneID = reference.zoneID else { continue }
            if let target = context.target(zoneID), target.key == access.key,
                target.zoneName.isExactly(access.zone.name)
            {
                continue
            }
            return "field '\(field)' refers to record '\(reference.recordName)' in zone '\(zoneID.zoneName)'"
                + (zoneID.ownerRecordName.map { " of \($0)" } ?? "")
                + ", not the record's zone: a reference must stay in its record's zone"
        }
        return nil
    }

    /// Works out what one operation does to the zone as it stands, or why it fails.
    private func plan(
        _ operation: RecordOperation, existing row: StoredRecord?, access: ZoneAccess, stamp: RecordStamp,
        quotaExceeded: Bool, receipts: AssetReceipts
    ) -> Plan {
        let zoneName = access.zone.name
        let existing = row?.record
        let sent = operation.record
        var name = sent.recordName
        func failure(_ code: CloudError.Code, _ reason: String, serverRecord: Record? = nil) -> Plan {
            .failure(
                CloudError(code, reason: reason, recordName: name, zoneID: requestZoneID, serverRecord: serverRecord))
        }

        if name.isEmpty {
            guard operation.type == .create else { return failure(.badRequest, "the record has no name") }
            name = UUID().uuidString
        }
        if operation.type.mergesFields,
            let both = operation.clearedFields.first(where: { sent.fields[$0] != nil })
        {
            return failure(.badRequest, "field '\(both)' is both sent and cleared")
        }
        guard let sentZone = context.target(sent.zoneID), sentZone.key == access.key,
            sentZone.zoneName.isExactly(zoneName)
        else {
            return failure(
                .badRequest, "the record's zone '\(sent.zoneID.zoneName)' is not the request's zone '\(zoneName)'")
        }
        // Checked before anything that would tell a record outside the share apart from a missing one.
        if access.view.participant != nil, operation.type.isDelete, let stored = row?.record,
            ShareRules.isShare(stored.recordType), access.view.permission(for: row?.shareKey) != nil
        {
            return .success(.leave(name, zoneID: access.zoneID))
        }
        if let refusal = WritePermissions.refusal(
            row, recordType: sent.recordType, isDelete: operation.type.isDelete, access: access, context: context)
        {
            return failure(.accessDenied, refusal)
        }

        let type = operation.type
        if type.checksChangeTag || type == .forceDelete {
            guard let existing else { return failure(.notFound, "the record does not exist") }
            if type.checksChangeTag, sent.changeTag != existing.changeTag {
                return failure(
                    .conflict,
                    sent.changeTag.map { "the change tag \($0) is out of date" }
                        ?? "the record exists and the operation carries no change tag",
                    serverRecord: existing)
            }
        }
        if type == .create, let existing {
            return failure(.exists, "a record with this name already exists", serverRecord: existing)
        }
        if type.isDelete { return .success(.delete(name, zoneID: access.zoneID)) }

        guard !sent.recordType.isEmpty else { return failure(.badRequest, "the record has no type") }
        if let existing, !existing.recordType.isExactly(sent.recordType) {
            return failure(.badRequest, "a record of type \(existing.recordType) cannot become a \(sent.recordType)")
        }
        if quotaExceeded { return failure(.quotaExceeded, "the user's storage is full") }

        var fields = sent.fields
        var parent = sent.parent
        var details = sent.shareDetails
        if type.mergesFields, let existing {
            fields = existing.fields
            for (key, value) in sent.fields { fields[key] = value }
            // Never a field sent (refused above): the assets resolved below cannot bring one back.
            for field in operation.clearedFields { fields.removeValue(forKey: field) }
            parent = parent ?? existing.parent
            details = details ?? existing.shareDetails
        }
        if let parent {
            guard !parent.isExactly(name) else { return failure(.badRequest, "a record cannot be its own parent") }
        }
        // Types are known without reading the values.
        let sentFields = sent.fields
        for position in sentFields.indices {
            if let refusal = schema.refusal(
                of: sentFields.type(at: position), isEmptyList: sentFields.isEmptyList(at: position),
                field: sentFields.name(at: position), recordType: sent.recordType,
                environment: context.key.environment)
            {
                return failure(.badRequest, refusal)
            }
        }
        if let refusal = Self.crossZoneReference(in: sentFields, access: access, context: context) {
            return failure(.badRequest, refusal)
        }
        switch receipts.resolve(
            sentFields, existing: existing, recordName: name, zone: access.zone.id, user: context.user ?? "",
            now: ServerTime.milliseconds(now))
        {
        case .success(let assets): for (field, value) in assets { fields[field] = value }
        case .failure(var error):
            error.zoneID = requestZoneID
            return .failure(error)
        }
        let size = WireFormat.encodedSize(ofFields: fields)
        guard size <= recordSizeLimit else {
            return failure(.badRequest, "the record is \(size) bytes, over the limit of \(recordSizeLimit) bytes")
        }
        // The change tag is set when the save takes its serial.
        let metadata = RecordMetadata(
            changeTag: "", zoneID: ZoneID(zoneName: zoneName), created: existing?.metadata?.created ?? stamp,
            modified: stamp)
        var record = Record(
            recordType: sent.recordType, recordName: name, zoneID: ZoneID(zoneName: zoneName), fields: fields,
            metadata: metadata)
        record.parent = parent
        // The server keeps `share`: a client that does not know of it cannot
        // clear it by saving the record; the share modification checks a new one.
        record.share = sent.share ?? existing?.share
        if ShareRules.isShare(sent.recordType) {
            record.shareDetails = details ?? ShareDetails()
        }
        return .success(.save(record, desiredKeys: operation.desiredKeys))
    }

    /// Fails the saves whose `VALIDATE` references point at records that will
    /// not exist once the request is applied; reads the targets in one query.
    /// A participant's target outside its shares counts as missing, so that
    /// a reference cannot tell it apart from a record that does not exist.
    private func validateReferences(
        _ plans: inout [Plan], access: ZoneAccess, rows: [ExactName: StoredRecord],
        _ transaction: any StorageTransaction
    ) async throws {
        var saved = Set<ExactName>()
        var deleted = Set<ExactName>()
        for case .success(let change) in plans {
            switch change {
            case .save(let record, _): saved.insert(ExactName(record.recordName))
            case .delete(let name, _): deleted.insert(ExactName(name))
            case .leave: break
            }
        }
        // The targets the request itself does not settle.
        var unknown = Set<ExactName>()
        for case .success(.save(let record, _)) in plans {
            for (_, reference) in record.references where reference.action == .validate {
                let target = ExactName(reference.recordName)
                if saved.contains(target) || deleted.contains(target) || rows[target] != nil { continue }
                unknown.insert(target)
            }
        }
        var found = rows
        if !unknown.isEmpty {
            for row in try await transaction.records(named: unknown.sorted().map(\.string), inZone: access.zone.id) {
                found[ExactName(row.name)] = row
            }
        }
        func exists(_ reference: Reference) -> Bool {
            let target = ExactName(reference.recordName)
            if saved.contains(target) { return true }
            if deleted.contains(target) { return false }
            guard let row = found[target], row.record != nil else { return false }
            return access.view.permission(for: row.shareKey) != nil
        }
        for index in plans.indices {
            guard case .success(.save(let record, _)) = plans[index] else { continue }
            if let (field, dangling) = record.references.first(where: {
                $0.reference.action == .validate && !exists($0.reference)
            }) {
                plans[index] = .failure(
                    CloudError(
                        .validatingReferenceError,
                        reason: "field '\(field)' refers to record '\(dangling.recordName)', which does not exist",
                        recordName: operations[index].record.recordName, zoneID: requestZoneID))
            }
        }
    }
}

/// Applies a modify's changes in order over the zone's rows, taking each
/// change's serial from the zone, and keeps the rows to write at the end.
struct Applier {
    var zone: StoredZone
    /// The rows as they stood before the request, read so far.
    var rows: [ExactName: StoredRecord]
    let transaction: any StorageTransaction
    /// The rows the request writes, by name: each record's final state.
    var pending: [ExactName: StoredRecord] = [:]
    /// The hierarchy share each saved record is in, by name, as the share
    /// modification worked it out (absent: in none).
    var membership: [ExactName: String] = [:]

    init(zone: StoredZone, rows: [ExactName: StoredRecord], transaction: any StorageTransaction) {
        self.zone = zone
        self.rows = rows
        self.transaction = transaction
    }

    /// A change tag that no other version of a record of any zone
    /// incarnation takes: the zone's incarnation and the save's serial.
    private var changeTag: String {
        "\(String(zone.incarnation, radix: 36))-\(String(zone.serial, radix: 36))"
    }

    mutating func save(_ record: Record, creator: String?) async throws -> Record {
        let name = ExactName(record.recordName)
        let shareKey = membership[name]
        let before = try await current(name)
        zone.serial += 1
        var saved = record
        saved.metadata?.changeTag = changeTag
        pending[name] = StoredRecord(
            name: record.recordName, recordType: record.recordType, serial: zone.serial, creator: creator,
            record: saved, deleteSelfTargets: saved.deleteSelfTargets, parent: saved.parent, shareKey: shareKey,
            formerShareKey: Self.formerShareKey(before: before, after: shareKey))
        return saved
    }

    /// Writes the rows, the zone, and the zone's change in its database's
    /// history, and marks the assets the records took up as held and those
    /// they let go of as unheld since `time`.
    func commit(in database: inout StoredDatabase, at time: Int64, origin: String? = nil) async throws {
        var held = Set<ExactName>()
        var released = Set<ExactName>()
        for (name, row) in pending {
            let before = AssetRules.assetIDs(in: rows[name]?.record)
            let after = AssetRules.assetIDs(in: row.record)
            held.formUnion(after.subtracting(before))
            released.formUnion(before.subtracting(after))
        }
        if !held.isEmpty { try await transaction.holdAssets(ids: held.sorted().map(\.string)) }
        if !released.isEmpty { try await transaction.releaseAssets(ids: released.sorted().map(\.string), at: time) }
        try await transaction.saveRecords(pending.values.sorted { $0.serial < $1.serial }, inZone: zone.id)
        try await transaction.updateZone(zone)
        database.serial += 1
        try await transaction.logZoneChanges(
            [ZoneLogEntry(zoneName: zone.name, serial: database.serial, deleted: false, origin: origin)],
            inDatabase: database.id)
        try await transaction.updateDatabase(database)
    }

    /// The share a change takes a record out of, kept until the record is
    /// back in it: its participants see the record as deleted, however late
    /// they fetch.
    static func formerShareKey(before: StoredRecord?, after shareKey: String?) -> String? {
        let isSame = { (a: String?, b: String?) in a.map { x in b.map(x.isExactly) ?? false } ?? (b == nil) }
        if let old = before?.shareKey, !isSame(old, shareKey) { return old }
        if let former = before?.formerShareKey, !isSame(former, shareKey) { return former }
        return nil
    }

    /// Rewrites the live descendants of the records whose hierarchy share
    /// the request changed, down to the roots of other shares, so that each
    /// row says which share covers it.
    mutating func propagateMembership(from roots: [ExactName]) async throws {
        var queue = roots
        var visited = Set(roots)
        while !queue.isEmpty {
            let parents = queue
            queue = []
            let shareKeys = Dictionary(
                parents.map { ($0, pending[$0]?.shareKey ?? rows[$0]?.shareKey) }, uniquingKeysWith: { a, _ in a })
            for child in try await transaction.children(of: parents.map(\.string), inZone: zone.id) {
                let name = ExactName(child.name)
                guard visited.insert(name).inserted, let parent = child.parent else { continue }
                // A record the request saved, and the root of another share, keep their own.
                guard pending[name] == nil, child.record?.share == nil else { continue }
                if rows[name] == nil { rows[name] = child }
                let shareKey = shareKeys[ExactName(parent)] ?? nil
                let isSame =
                    shareKey.map { key in child.shareKey.map(key.isExactly) ?? false } ?? (child.shareKey == nil)
                guard !isSame else { continue }
                zone.serial += 1
                var row = child
                row.serial = zone.serial
                row.formerShareKey = Self.formerShareKey(before: child, after: shareKey)
                row.shareKey = shareKey
                row.record?.metadata?.changeTag = changeTag
                pending[name] = row
                queue.append(name)
            }
        }
    }

    /// Rewrites a live record's row with a change the server makes (a
    /// share's end, a participant's status), with a new serial and change tag.
    mutating func rewrite(_ name: ExactName, _ change: (inout Record) -> Void) async throws {
        guard var row = try await current(name), var record = row.record else { return }
        change(&record)
        zone.serial += 1
        record.metadata?.changeTag = changeTag
        row.record = record
        row.serial = zone.serial
        pending[name] = row
    }

    /// The row of a record as the request has left it so far.
    mutating func current(_ name: ExactName) async throws -> StoredRecord? {
        if let row = pending[name] { return row }
        if let row = rows[name] { return row }
        guard let row = try await transaction.records(named: [name.string], inZone: zone.id).first else { return nil }
        rows[name] = row
        return row
    }

    /// Deletes a record and, in turn, every record of the zone that refers
    /// to a deleted one with the `DELETE_SELF` action.
    mutating func deleteCascading(_ name: String) async throws {
        var queue = [ExactName(name)]
        while let next = queue.popLast() {
            guard let row = try await current(next), row.record != nil else { continue }
            zone.serial += 1
            pending[next] = StoredRecord(
                name: row.name, recordType: row.recordType, serial: zone.serial, creator: row.creator, record: nil,
                deleteSelfTargets: [], shareKey: row.shareKey, formerShareKey: row.formerShareKey)
            // Stored references stand for the records this request has not rewritten.
            let stored = try await transaction.deleteSelfReferrers(of: [next.string], inZone: zone.id)
                .map(ExactName.init).filter { pending[$0] == nil }
            let rewritten = pending.values.filter {
                $0.record != nil && $0.deleteSelfTargets.contains { $0.isExactly(next.string) }
            }.map { ExactName($0.name) }
            queue += (stored + rewritten).sorted()
        }
    }
}
