import CloudCodable
import CloudProtocol
import Foundation

extension RecordService {
    /// `records/modify`: one transaction that reads the zone and every named
    /// record at once, decides each operation, and writes the changes.
    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool, context: RequestContext)
        async throws -> [RecordResult]
    {
        try ServerLimits.checkItemCount(operations.count, of: "operations")
        var names = Set<ExactName>()
        for operation in operations where !operation.record.recordName.isEmpty {
            let name = operation.record.recordName
            guard names.insert(ExactName(name)).inserted else {
                throw CloudError(
                    .badRequest, reason: "record '\(name)' appears in more than one operation of the request",
                    recordName: name, zoneID: zoneID)
            }
        }
        guard !operations.isEmpty else { return [] }
        let schemaKey = SchemaKey(container: context.key.container, environment: context.key.environment)
        var schema = try await schema(schemaKey)
        if context.key.environment == .production,
            operations.contains(where: { operation in
                operation.record.fields.keys.contains {
                    schema.type(ofField: $0, in: operation.record.recordType) == nil
                }
            })
        {
            // Another server may have deployed fields since this one loaded production's schema.
            let stored = try await storage.read { transaction in
                try await transaction.fieldTypes(container: schemaKey.container.string, environment: .production)
            }
            reload(stored, in: schemaKey)
            schema = Schema(stored)
        }
        let modification = RecordModification(
            operations: operations, requestZoneID: zoneID, atomic: atomic, context: context,
            recordSizeLimit: recordSizeLimit, schema: schema, now: now(), publicURL: publicURL,
            queryNotificationCutoff: queryNotificationCutoff())
        var outcome: ModifyOutcome
        do {
            outcome = try await storage.write { transaction in try await modification.run(transaction) }
        } catch let conflict as SchemaConflict {
            // Another server typed a field first: plan again against the schema as stored, so
            // that the answer is the per-record refusal any server gives.
            reload(conflict.stored, in: schemaKey)
            var replanned = modification
            replanned.schema = Schema(conflict.stored)
            let again = replanned
            do {
                outcome = try await storage.write { transaction in try await again.run(transaction) }
            } catch let second as SchemaConflict {
                reload(second.stored, in: schemaKey)
                throw second.error
            }
        }
        if !outcome.newFieldTypes.isEmpty { learn(outcome.newFieldTypes, in: schemaKey) }
        if let zone = outcome.changedZone {
            notify(
                outcome.key ?? context.key, changedZones: [zone], subscriptions: outcome.subscriptions,
                queryNotifications: outcome.queryNotifications)
            for key in outcome.sharedDatabases { notify(key, changedZones: [zone], subscriptions: []) }
        }
        return outcome.results
    }

    /// `records/lookup`.
    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?, context: RequestContext)
        async throws -> [RecordResult]
    {
        try ServerLimits.checkItemCount(recordNames.count, of: "records")
        return try await storage.read { transaction in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: false, transaction)
            else {
                return recordNames.map { .failure(ServerLimits.zoneNotFound(zoneID, recordName: $0)) }
            }
            let unique = Array(Set(recordNames.map(ExactName.init))).map(\.string)
            let rows = try await transaction.records(named: unique, inZone: access.zone.id)
            var found: [ExactName: Record] = [:]
            // A record outside the caller's shares reads as missing.
            for row in rows where access.view.canSee(row.shareKey) { found[ExactName(row.name)] = row.record }
            return recordNames.map { name in
                guard let record = found[ExactName(name)] else {
                    return .failure(
                        CloudError(.notFound, reason: "the record does not exist", recordName: name, zoneID: zoneID))
                }
                return .record(access.present(record, to: context.user).keeping(desiredKeys))
            }
        }
    }

    /// `records/query`.
    ///
    /// The filters and sort run in Swift over the zone's live records of the
    /// query's type. A query without a sort key answers in byte order of the
    /// record names, the order of the storage's primary key: it reads the
    /// zone by name (from its `___recordID BEGINS_WITH` prefix, if it has
    /// one, to the end of the names that begin with it) only until the page
    /// is full. One with a sort key reads
    /// every record of the type (by an index on the type) to sort them;
    /// pushing the comparators and sort keys into SQL is left for when zones
    /// grow large.
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?,
        desiredKeys: [String]?, context: RequestContext
    ) async throws -> QueryResult {
        let limit = try ServerLimits.pageSize(resultsLimit)
        try QueryEvaluation.validate(query)
        var offset = 0
        if let continuationMarker {
            guard let parsed = QueryEvaluation.offset(fromMarker: continuationMarker) else {
                throw CloudError(.badRequest, reason: "the continuation marker '\(continuationMarker)' is not valid")
            }
            offset = parsed
        }
        if query.sort.isEmpty {
            return try await queryByName(
                query, zoneID: zoneID, offset: offset, limit: limit, desiredKeys: desiredKeys, context: context)
        }
        let candidates = try await storage.read { transaction -> [Record]? in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: false, transaction)
            else { return nil }
            return try await transaction.liveRecords(ofType: query.recordType, inZone: access.zone.id)
                .filter { access.view.canSee($0.shareKey) }
                .compactMap { $0.record.map { access.present($0, to: context.user) } }
        }
        guard let candidates else { throw ServerLimits.zoneNotFound(zoneID, recordName: nil) }
        let matches =
            candidates
            .filter { QueryEvaluation.matches($0, query.filters) }
            .sorted { QueryEvaluation.areInIncreasingOrder($0, $1, by: query.sort) }
        guard offset < matches.count else { return QueryResult(records: [], continuationMarker: nil) }
        let end = min(offset + limit, matches.count)
        return QueryResult(
            records: matches[offset..<end].map { $0.keeping(desiredKeys) },
            continuationMarker: end < matches.count ? QueryEvaluation.marker(forOffset: end) : nil)
    }

    /// An unsorted query: the matches in byte order of their names (the
    /// order ``QueryEvaluation/areInIncreasingOrder(_:_:by:)`` gives with no
    /// sort key), read from the zone by name in one transaction until the
    /// page and one match more are found.
    private func queryByName(
        _ query: RecordQuery, zoneID: ZoneID, offset: Int, limit: Int, desiredKeys: [String]?,
        context: RequestContext
    ) async throws -> QueryResult {
        let wanted = offset + limit + 1
        let batch = 200
        // With a name prefix, the matches are the prefix itself and the run of names after it that begin with it.
        let prefix = query.filters.lazy.compactMap { filter -> String? in
            guard filter.fieldName.isExactly(QueryEvaluation.recordIDField), filter.comparator == .beginsWith,
                case .string(let prefix) = filter.fieldValue
            else { return nil }
            return prefix
        }.first
        let matches = try await storage.read { transaction -> [Record]? in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: false, transaction)
            else { return nil }
            var matches: [Record] = []
            func consider(_ row: StoredRecord) {
                guard row.recordType.isExactly(query.recordType), access.view.canSee(row.shareKey),
                    let record = row.record.map({ access.present($0, to: context.user) }),
                    QueryEvaluation.matches(record, query.filters)
                else { return }
                matches.append(record)
            }
            var cursor: String?
            if let prefix, !prefix.isEmpty {
                for row in try await transaction.records(named: [prefix], inZone: access.zone.id) { consider(row) }
                cursor = prefix
            }
            scan: while matches.count < wanted {
                let rows = try await transaction.liveRecords(inZone: access.zone.id, after: cursor, limit: batch)
                for row in rows {
                    if let prefix, !row.name.utf8.starts(with: prefix.utf8) { break scan }
                    consider(row)
                    if matches.count == wanted { break scan }
                }
                guard rows.count == batch, let last = rows.last else { break }
                cursor = last.name
            }
            return matches
        }
        guard let matches else { throw ServerLimits.zoneNotFound(zoneID, recordName: nil) }
        guard offset < matches.count else { return QueryResult(records: [], continuationMarker: nil) }
        let end = min(offset + limit, matches.count)
        return QueryResult(
            records: matches[offset..<end].map { $0.keeping(desiredKeys) },
            continuationMarker: end < matches.count ? QueryEvaluation.marker(forOffset: end) : nil)
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

    /// The references of the record's fields (single and in lists).
    var references: [(field: String, reference: Reference)] { fields.references }

    /// The names of the records of its own zone this record refers to with `DELETE_SELF`.
    var deleteSelfTargets: [String] {
        let targets = references.compactMap { _, reference -> String? in
            guard reference.action == .deleteSelf,
                reference.zoneID.map({ $0.zoneName.isExactly(zoneID.zoneName) }) ?? true
            else { return nil }
            return reference.recordName
        }
        return Array(Set(targets.map(ExactName.init))).sorted().map(\.string)
    }
}
