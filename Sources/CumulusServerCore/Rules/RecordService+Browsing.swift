import CloudCodable
import CloudProtocol

/// A page of a zone's records in byte order of their names (see
/// ``RecordService/browseRecords(in:after:limit:as:)``).
public struct RecordNamePage: Sendable, Hashable {
    /// The records, as the caller reads them.
    public var records: [Record]
    /// The name the next page starts after, or `nil` when this page is the last.
    public var nextAfter: String?

    /// Creates a page.
    public init(records: [Record], nextAfter: String?) {
        self.records = records
        self.nextAfter = nextAfter
    }
}

extension RecordService {
    /// A page of the live records of a zone as `caller` may read them, in
    /// byte order of their names, after `name` (from the first for `nil`):
    /// how the operator's console lists a zone.
    ///
    /// The zone is reached and its records shown as `records/query` does
    /// for the same caller (in the shared database, only the records of the
    /// shares they accepted). The storage reads the records in pages of
    /// `limit + 1` by name; only a caller who sees few of a zone's records
    /// makes it read more than one.
    ///
    /// - Throws: `ZONE_NOT_FOUND` for a zone the caller cannot reach;
    ///   `BAD_REQUEST` for a `limit` under 1 (more than 200 reads 200).
    public func browseRecords(in zoneID: ZoneID, after name: String?, limit: Int, as caller: Caller) async throws
        -> RecordNamePage
    {
        let limit = try ServerLimits.pageSize(limit)
        // Checked as the lookup of the name it starts after would be.
        let request = CloudRequest.lookupRecords(recordNames: name.map { [$0] } ?? [], zoneID: zoneID, desiredKeys: nil)
        try NameRules.check(caller)
        try NameRules.check(request)
        let context = try RequestContext(caller, request: request)
        let page = try await storage.read { transaction -> RecordNamePage? in
            guard let access = try await ZoneAccess.open(zoneID, context: context, readingShares: false, transaction)
            else { return nil }
            var records: [Record] = []
            var cursor = name
            while true {
                let rows = try await transaction.liveRecords(inZone: access.zone.id, after: cursor, limit: limit + 1)
                for row in rows where access.view.canSee(row.shareKey) {
                    guard let record = row.record else { continue }
                    guard records.count < limit else {
                        return RecordNamePage(records: records, nextAfter: records.last?.recordName)
                    }
                    records.append(access.present(record, to: context.user))
                }
                guard rows.count == limit + 1, let last = rows.last else {
                    return RecordNamePage(records: records, nextAfter: nil)
                }
                cursor = last.name
            }
        }
        guard let page else { throw ServerLimits.zoneNotFound(zoneID, recordName: nil) }
        return page
    }
}
