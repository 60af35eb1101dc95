import CloudCodable
import CloudProtocol
import Foundation

extension SyncEngine {
    /// Encodes and decodes a page's records on every core: the bulk of
    /// applying a page.
    static func prepare(_ entries: [RecordResult], opening: @escaping @Sendable (Record) throws -> Record)
        async throws -> [Replica<Model>.Fetched?]
    {
        try await parallelMap(entries, minimumCount: 64) { entry in
            // Another engine's record type in a shared zone is not this engine's to decode.
            guard case .record(let record) = entry, record.recordType == Model.cloudRecordType else { return nil }
            return Replica<Model>.Fetched(
                json: Result { try WireFormat.encode(record) },
                model: Result { try RecordDecoder().decode(Model.self, from: opening(record)) })
        }
    }
}
