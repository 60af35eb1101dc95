import CloudCodable
import CloudProtocol
import SQLiteNIO

extension SQLiteStorage: ServerReadiness, StorageObserving, ChannelCensus {
    /// The schema version of the file (`PRAGMA user_version`) and the one
    /// this server writes; throws when the file cannot be read.
    public func schemaVersions() async throws -> SchemaVersions {
        let stored = try await read { transaction in
            let rows = try await Self.statements(of: transaction).query("PRAGMA user_version")
            guard case .integer(let version) = rows.first?.column("user_version") else {
                throw CloudError(.internalError, reason: "the database file has no schema version")
            }
            return version
        }
        return SchemaVersions(stored: stored, written: SQLiteSchema.version)
    }

    func openChannelCount(usedSince cutoff: Int64) async throws -> Int {
        try await read { transaction in
            let rows = try await Self.statements(of: transaction).query(
                "SELECT count(*) AS channels FROM notification_channels WHERE last_used >= ?", [.integer(Int(cutoff))])
            guard case .integer(let count) = rows.first?.column("channels") else { return 0 }
            return count
        }
    }

    private static func statements(of transaction: any StorageTransaction) throws -> SQLiteTransaction {
        guard let transaction = transaction as? SQLiteTransaction else {
            throw CloudError(.internalError, reason: "a SQLite storage ran a transaction of another store")
        }
        return transaction
    }

    /// Runs `body`, counting in the metrics what fails in SQLite itself (its
    /// errors, a damaged row) rather than by the protocol's rules.
    func reportingFailures<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CloudError {
            if error.code == .internalError { observer.failed(.other) }
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            observer.failed(.other)
            throw error
        }
    }
}
