import Cumulus
import Foundation

extension InMemoryCloudServer {
    /// A change one operation of a `records/modify` request will make, once
    /// the whole request is known to go through.
    private enum PlannedChange {
        case save(Record)
        case delete(String)
    }

    private struct PlannedOperation {
        var change: PlannedChange
        var answer: RecordResult
    }

    /// `records/modify`.
    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, caller: Caller) throws
        -> [RecordResult]
    {
        try checkItemCount(operations.count, of: "operations")
        var names = Set<String>()
        for operation in operations where !operation.record.recordName.isEmpty {
            let name = operation.record.recordName
            guard names.insert(name).inserted else {
                throw CloudError(
                    .badRequest, reason: "record '\(name)' appears in more than one operation of the request",
                    recordName: name, zoneID: zoneID)
            }
        }
        guard !operations.isEmpty else { return [] }

        let key = caller.databaseKey
        var database = takeDatabase(key)
        defer { databases[key] = database }
        guard let zoneName = ownZoneName(zoneID, user: caller.user), database.zones[zoneName] != nil else {
            return operations.map { .failure(zoneNotFound(zoneID, recordName: $0.record.recordName)) }
        }

        let quotaExceeded = controls.isQuotaExceeded(for: caller.user)
        let stamp = RecordStamp(date: time.now(), userRecordName: caller.user)
        var plans = operations.map { operation in
            plan(
                operation, in: database.zones[zoneName]!, zoneName: zoneName, requestZoneID: zoneID,
                caller: caller, stamp: stamp, quotaExceeded: quotaExceeded)
        }
        validateReferences(
            &plans, operations: operations, zoneName: zoneName, requestZoneID: zoneID, user: caller.user,
            database: database)

        // In the default zone a request is never atomic (CloudKit's atomic
        // commits need a custom zone).
        let isAtomic = atomic && zoneName != ZoneID.defaultZone.zoneName
        if isAtomic, plans.contains(where: { (try? $0.get()) == nil }) {
            return zip(operations, plans).map { operation, plan in
                switch plan {
                case .failure(let error): .failure(error)
                case .success:
                    .failure(
                        CloudError(
                            .atomicError, reason: "another operation of this atomic request failed",
                            recordName: operation.record.recordName, zoneID: zoneID))
                }
            }
        }

        var changed = false
        for case .success(let planned) in plans {
            changed = true
            switch planned.change {
            case .save(let record): database.zones[zoneName]!.save(record)
            case .delete(let name): deleteCascading(name, in: &database.zones[zoneName]!)
            }
        }
        if changed {
            database.logChange(ofZone: zoneName)
            notify(key, changedZones: [zoneName])
        }
        return plans.map { plan in
            switch plan {
            case .success(let planned): planned.answer
            case .failure(let error): .failure(error)
            }
        }
    }

    /// Works out what one operation does to the zone as it stands, or why it fails.
    private func plan(
        _ operation: RecordOperation, in zone: ZoneState, zoneName: String, requestZoneID: ZoneID,
        caller: Caller, stamp: RecordStamp, quotaExceeded: Bool
    ) -> Result<PlannedOperation, CloudError> {
        let sent = operation.record
        var name = sent.recordName
        func failure(_ code: CloudError.Code, _ reason: String, serverRecord: Record? = nil)
            -> Result<PlannedOperation, CloudError>
        {
            .failure(
                CloudError(
                    code, reason: reason, recordName: name, zoneID: requestZoneID, serverRecord: serverRecord))
        }

        if name.isEmpty {
            guard operation.type == .create else { return failure(.badRequest, "the record has no name") }
            name = UUID().uuidString
        }
        guard ownZoneName(sent.zoneID, user: caller.user) == zoneName else {
            return failure(
                .badRequest, "the record's zone '\(sent.zoneID.zoneName)' is not the request's zone '\(zoneName)'")
        }
        let existing = zone.record(named: name)
        if caller.scope == .public, let existing, let creator = existing.metadata?.created?.userRecordName,
            creator != caller.user
        {
            return failure(.accessDenied, "only its creator may change a record of the public database")
        }

        let type = operation.type
        if type.checksChangeTag || type == .forceDelete {
            guard let existing else { return failure(.notFound, "the record does not exist") }
            if type.checksChangeTag, sent.changeTag != existing.changeTag {
                return failure(
                    .conflict,
                    sent.changeTag == nil
                        ? "the record exists and the operation carries no change tag"
                        : "the change tag \(sent.changeTag!) is out of date",
                    serverRecord: existing)
            }
        }
        if type == .create, let existing {
            return failure(.exists, "a record with this name already exists", serverRecord: existing)
        }
        if type.isDelete {
            return .success(
                PlannedOperation(
                    change: .delete(name), answer: .deleted(recordName: name, zoneID: canonicalZoneID(zoneName))))
        }

        guard !sent.recordType.isEmpty else { return failure(.badRequest, "the record has no type") }
        if let existing, existing.recordType != sent.recordType {
            return failure(
                .badRequest, "a record of type \(existing.recordType) cannot become a \(sent.recordType)")
        }
        if quotaExceeded { return failure(.quotaExceeded, "the user's storage is full") }

        var fields = sent.fields
        if type == .update || type == .forceUpdate, let existing {
            fields = existing.fields
            for (key, value) in sent.fields { fields[key] = value }
        }
        let size = WireFormat.encodedSize(ofFields: fields)
        guard size <= recordSizeLimit else {
            return failure(
                .badRequest, "the record is \(size) bytes, over the limit of \(recordSizeLimit) bytes")
        }
        let metadata = RecordMetadata(
            changeTag: makeChangeTag(), zoneID: canonicalZoneID(zoneName),
            created: existing?.metadata?.created ?? stamp, modified: stamp)
        let record = Record(
            recordType: sent.recordType, recordName: name, zoneID: canonicalZoneID(zoneName), fields: fields,
            metadata: metadata)
        return .success(
            PlannedOperation(
                change: .save(record), answer: .record(record.keeping(operation.desiredKeys))))
    }

    /// Fails the saves whose `VALIDATE` references point at records that will
    /// not exist once the request is applied.
    private func validateReferences(
        _ plans: inout [Result<PlannedOperation, CloudError>], operations: [RecordOperation], zoneName: String,
        requestZoneID: ZoneID, user: String, database: DatabaseState
    ) {
        var saved = Set<String>()
        var deleted = Set<String>()
        for case .success(let planned) in plans {
            switch planned.change {
            case .save(let record): saved.insert(record.recordName)
            case .delete(let name): deleted.insert(name)
            }
        }
        func exists(_ reference: Reference) -> Bool {
            let targetZone = reference.zoneID.map { ownZoneName($0, user: user) } ?? zoneName
            guard let targetZone else { return false }
            if targetZone == zoneName {
                if saved.contains(reference.recordName) { return true }
                if deleted.contains(reference.recordName) { return false }
            }
            return database.zones[targetZone]?.record(named: reference.recordName) != nil
        }
        for index in plans.indices {
            guard case .success(let planned) = plans[index], case .save(let record) = planned.change else { continue }
            for (fieldName, value) in record.fields {
                let references: [Reference]
                switch value {
                case .reference(let reference): references = [reference]
                case .referenceList(let list): references = list
                default: continue
                }
                if let dangling = references.first(where: { $0.action == .validate && !exists($0) }) {
                    plans[index] = .failure(
                        CloudError(
                            .validatingReferenceError,
                            reason:
                                "field '\(fieldName)' refers to record '\(dangling.recordName)', which does not exist",
                            recordName: operations[index].record.recordName, zoneID: requestZoneID))
                    break
                }
            }
        }
    }

    /// Deletes a record and, in turn, every record of the zone that refers
    /// to a deleted one with the `DELETE_SELF` action.
    private func deleteCascading(_ name: String, in zone: inout ZoneState) {
        var pending = [name]
        while let next = pending.popLast() {
            guard zone.record(named: next) != nil else { continue }
            zone.delete(next)
            for record in zone.liveRecords where record.refersWithDeleteSelf(to: next) {
                pending.append(record.recordName)
            }
        }
    }

    /// `records/lookup`.
    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?, caller: Caller) throws
        -> [RecordResult]
    {
        try checkItemCount(recordNames.count, of: "records")
        let database = database(caller.databaseKey)
        guard let zoneName = ownZoneName(zoneID, user: caller.user), let zone = database.zones[zoneName] else {
            return recordNames.map { .failure(zoneNotFound(zoneID, recordName: $0)) }
        }
        return recordNames.map { name in
            guard let record = zone.record(named: name) else {
                return .failure(
                    CloudError(.notFound, reason: "the record does not exist", recordName: name, zoneID: zoneID))
            }
            return .record(record.keeping(desiredKeys))
        }
    }

    /// `records/query`.
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?,
        desiredKeys: [String]?, caller: Caller
    ) throws -> QueryResult {
        let limit = try pageSize(resultsLimit)
        try QueryEvaluation.validate(query)
        var offset = 0
        if let continuationMarker {
            guard let parsed = QueryEvaluation.offset(fromMarker: continuationMarker) else {
                throw CloudError(.badRequest, reason: "the continuation marker '\(continuationMarker)' is not valid")
            }
            offset = parsed
        }
        let database = database(caller.databaseKey)
        guard let zoneName = ownZoneName(zoneID, user: caller.user), let zone = database.zones[zoneName] else {
            throw zoneNotFound(zoneID, recordName: nil)
        }
        let matches = zone.liveRecords
            .filter { $0.recordType == query.recordType && QueryEvaluation.matches($0, query.filters) }
            .sorted { QueryEvaluation.areInIncreasingOrder($0, $1, by: query.sort) }
        guard offset < matches.count else { return QueryResult(records: [], continuationMarker: nil) }
        let end = min(offset + limit, matches.count)
        return QueryResult(
            records: matches[offset..<end].map { $0.keeping(desiredKeys) },
            continuationMarker: end < matches.count ? QueryEvaluation.marker(forOffset: end) : nil)
    }

    // MARK: Helpers

    /// Throws `BAD_REQUEST` for a request over the 200-item limit.
    func checkItemCount(_ count: Int, of items: String) throws {
        guard count <= ServerLimits.operationsPerRequest else {
            throw CloudError(
                .badRequest,
                reason: "the request has \(count) \(items), over the limit of \(ServerLimits.operationsPerRequest)")
        }
    }

    /// The page size a `resultsLimit` asks for: 200 when absent, at most 200.
    func pageSize(_ resultsLimit: Int?) throws(CloudError) -> Int {
        guard let resultsLimit else { return ServerLimits.resultsPerResponse }
        guard resultsLimit > 0 else {
            throw CloudError(.badRequest, reason: "resultsLimit must be at least 1, not \(resultsLimit)")
        }
        return min(resultsLimit, ServerLimits.resultsPerResponse)
    }

    func zoneNotFound(_ zoneID: ZoneID, recordName: String?) -> CloudError {
        CloudError(
            .zoneNotFound, reason: "the zone '\(zoneID.zoneName)' does not exist", recordName: recordName,
            zoneID: zoneID)
    }
}

extension Record {
    /// The record with only the fields named in `desiredKeys` (all of them for `nil`).
    func keeping(_ desiredKeys: [String]?) -> Record {
        guard let desiredKeys else { return self }
        var copy = self
        copy.fields = [:]
        for key in desiredKeys {
            if let value = fields[key] { copy.fields[key] = value }
        }
        return copy
    }

    /// Whether a field refers to the record `name` of the same zone with the `DELETE_SELF` action.
    func refersWithDeleteSelf(to name: String) -> Bool {
        fields.values.contains { value in
            switch value {
            case .reference(let reference):
                reference.action == .deleteSelf && reference.recordName == name
                    && (reference.zoneID == nil || reference.zoneID?.zoneName == zoneID.zoneName)
            case .referenceList(let list):
                list.contains {
                    $0.action == .deleteSelf && $0.recordName == name
                        && ($0.zoneID == nil || $0.zoneID?.zoneName == zoneID.zoneName)
                }
            default: false
            }
        }
    }
}
