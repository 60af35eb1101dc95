extension PostgresStorage {
    /// The bounds on every storage call, so that no request waits on
    /// PostgreSQL forever.
    ///
    /// ```swift
    /// var limits = PostgresStorage.Limits()
    /// limits.transactionTimeout = .seconds(30)  // for slow queries over huge zones
    /// let storage = try await PostgresStorage(url: url, limits: limits, logger: logger)
    /// ```
    public struct Limits: Sendable, Hashable {
        /// How long a transaction waits for a connection, and the time from
        /// its start within which one whose connection broke before its
        /// commit is run again on a new one. 5 seconds by default: the time
        /// within which requests answer `TRY_AGAIN_LATER` while PostgreSQL is down.
        public var connectionWait: Duration
        /// PostgreSQL's `statement_timeout` and
        /// `idle_in_transaction_session_timeout` for each connection: the
        /// server ends a statement that runs or waits for a lock this long,
        /// and the session of a client that left a transaction open this long
        /// (which frees its locks for the other servers). 10 seconds by default.
        public var statementTimeout: Duration
        /// The deadline of a transaction from its start, waiting for a
        /// connection included: past it the caller gets `TRY_AGAIN_LATER`
        /// whatever PostgreSQL does, and the transaction is closed without a
        /// commit. 15 seconds by default: a connection wait and a statement
        /// timeout, for a server that stopped answering without closing its
        /// connections.
        public var transactionTimeout: Duration
        /// What `TRY_AGAIN_LATER` tells the client to wait. 2 seconds by default.
        public var retryAfter: Duration

        /// Creates limits; every one must be positive.
        public init(
            connectionWait: Duration = .seconds(5), statementTimeout: Duration = .seconds(10),
            transactionTimeout: Duration = .seconds(15), retryAfter: Duration = .seconds(2)
        ) {
            self.connectionWait = connectionWait
            self.statementTimeout = statementTimeout
            self.transactionTimeout = transactionTimeout
            self.retryAfter = retryAfter
        }

        /// The settings each connection starts its session with.
        var startupParameters: [(String, String)] {
            let milliseconds = String(max(ServerTime.milliseconds(statementTimeout), 1))
            return [("statement_timeout", milliseconds), ("idle_in_transaction_session_timeout", milliseconds)]
        }
    }
}
