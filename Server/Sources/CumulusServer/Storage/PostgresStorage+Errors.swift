import CloudCodable
import CloudProtocol
import Logging
import PostgresNIO

extension PostgresStorage {
    /// The pool's own failures (its circuit breaker open after connections
    /// kept failing), whose type the pool's module does not export to us.
    static func isPoolError(_ error: any Error) -> Bool {
        String(reflecting: type(of: error)).hasSuffix("ConnectionPoolError")
    }

    /// Whether the transaction lost a race it should run again after: a
    /// serialization failure, a deadlock, or another server's claim of an
    /// address committed first (the retry then finds that address held).
    static func isSerializationFailure(_ error: PSQLError) -> Bool {
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        if state == "23505" { return error.serverInfo?[.constraintName] == "users_by_email" }
        return state == "40001" || state == "40P01"
    }

    /// Whether the connection broke, or its session was ended by a server
    /// shutting down (`57P01`, `57P02`): either way its transaction is gone.
    static func isConnectionFailure(_ error: any Error) -> Bool {
        if error is PostgresConnectionLost { return true }
        guard let error = error as? PSQLError else { return false }
        if error.code == .server {
            return ["57P01", "57P02"].contains(error.serverInfo?[.sqlState] ?? "")
        }
        return [.connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed]
            .contains(error.code)
    }

    /// SQLSTATEs that say the server is away or busy, not that the
    /// statement is wrong: connection exceptions, shutdowns, exhausted
    /// resources, a lock or statement timeout, a read-only standby, an
    /// idle transaction ended by the server.
    private static func isTransient(sqlState state: String) -> Bool {
        state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state.hasPrefix("40")
            || ["55P03", "57014", "25006", "25P03"].contains(state)
    }

    /// The ``CloudError`` a failure of PostgreSQL answers: `TRY_AGAIN_LATER`
    /// when the server is away, busy or too slow, `INTERNAL_ERROR` (logged)
    /// for a failure that means a bug.
    static func cloudError(for error: any Error, committing: Bool = false, limits: Limits, logger: Logger)
        -> CloudError
    {
        if let error = error as? CloudError { return error }
        let unavailable = CloudError(
            .tryAgainLater,
            reason: committing
                ? "the connection to the database broke during the commit; the request's outcome is unknown"
                : "the database is unavailable", retryAfter: limits.retryAfter)
        if let expired = error as? AttemptExpired {
            let seconds = ServerTime.milliseconds(limits.transactionTimeout) / 1000
            switch expired.expiry {
            case .noConnection, .cancelled:
                return unavailable
            case .abandoned:
                return CloudError(
                    .tryAgainLater, reason: "the database did not answer within \(seconds) s; nothing was committed",
                    retryAfter: limits.retryAfter)
            case .inDoubt:
                return CloudError(
                    .tryAgainLater,
                    reason:
                        "the database did not confirm the commit within \(seconds) s; the request's outcome is unknown",
                    retryAfter: limits.retryAfter)
            }
        }
        if error is PostgresConnectionLost || isPoolError(error) { return unavailable }
        if error is RolledBackAtCommit {
            logger.error("PostgreSQL rolled back a transaction at its commit")
            return CloudError(.internalError, reason: "the database rolled the transaction back at its commit")
        }
        guard let error = error as? PSQLError else {
            logger.error("storage failed", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return CloudError(.internalError, reason: "the storage failed")
        }
        if error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? ""
            if isTransient(sqlState: state) { return unavailable }
            let message = error.serverInfo?[.message] ?? ""
            logger.error("PostgreSQL failed", metadata: ["sqlstate": "\(state)", "message": "\(message)"])
            if state.hasPrefix("28") {
                return CloudError(.internalError, reason: "PostgreSQL refused the login (\(state)): \(message)")
            }
            if state == "3D000" { return CloudError(.internalError, reason: "PostgreSQL: \(message)") }
            if state == "22021" {
                // Text holding U+0000: PostgreSQL cannot store it, and must not cut it.
                return CloudError(.badRequest, reason: "PostgreSQL cannot store text holding U+0000")
            }
            return CloudError(.internalError, reason: "the storage failed (SQLSTATE \(state))")
        }
        if isConnectionFailure(error) || error.code == .queryCancelled { return unavailable }
        logger.error("PostgreSQL failed", metadata: ["code": "\(error.code)"])
        return CloudError(.internalError, reason: "the storage failed (\(error.code))")
    }
}
