import CloudCodable
import CloudProtocol
import PostgresNIO

extension PostgresStorage: ServerReadiness, StorageObserving, ChannelCensus {
    /// The schema version the database holds (the highest applied) and the
    /// one this server writes; throws when the database cannot be read.
    public func schemaVersions() async throws -> SchemaVersions {
        let stored = try await read { transaction in
            let rows = try await Self.statements(of: transaction).query(
                "SELECT coalesce(max(version), 0) AS version FROM cumulus_schema")
            guard let row = rows.first else {
                throw CloudError(.internalError, reason: "the PostgreSQL database's schema version cannot be read")
            }
            return try PostgresColumns(row, table: "cumulus_schema").value("version", as: Int.self)
        }
        return SchemaVersions(stored: stored, written: PostgresSchema.version)
    }

    func openChannelCount(usedSince cutoff: Int64) async throws -> Int {
        try await read { transaction in
            let rows = try await Self.statements(of: transaction).query(
                "SELECT count(*) AS channels FROM notification_channels WHERE last_used >= \(cutoff)")
            guard let row = rows.first else { return 0 }
            return Int(try PostgresColumns(row, table: "notification_channels").value("channels", as: Int64.self))
        }
    }

    private static func statements(of transaction: any StorageTransaction) throws -> PostgresTransaction {
        guard let transaction = transaction as? PostgresTransaction else {
            throw CloudError(.internalError, reason: "a PostgreSQL storage ran a transaction of another store")
        }
        return transaction
    }

    /// The ``CloudError`` a failure of PostgreSQL answers, counted in the
    /// metrics by its kind.
    func reportedError(for error: any Error, committing: Bool = false) -> CloudError {
        let mapped = Self.cloudError(for: error, committing: committing, limits: limits, logger: logger)
        if let kind = Self.failureKind(of: error, answered: mapped) { observer.failed(kind) }
        return mapped
    }

    /// A timeout when the deadline passed or PostgreSQL ended a statement
    /// for its `statement_timeout` or `lock_timeout`; unavailable for what
    /// answers `TRY_AGAIN_LATER` otherwise; nothing for text PostgreSQL
    /// cannot store (the client's input) or a caller that went away.
    static func failureKind(of error: any Error, answered: CloudError) -> StorageFailureKind? {
        if let expired = error as? AttemptExpired {
            switch expired.expiry {
            case .cancelled: return nil
            case .noConnection: return .unavailable
            case .abandoned, .inDoubt: return .timeout
            }
        }
        if let error = error as? PSQLError, error.code == .server,
            let state = error.serverInfo?[.sqlState], state == "57014" || state == "55P03"
        {
            return .timeout
        }
        switch answered.code {
        case .tryAgainLater: return .unavailable
        case .badRequest: return nil
        default: return .other
        }
    }
}
