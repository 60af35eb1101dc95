extension SQLiteSchema {
    /// Version ten gives users the name others see (both parts empty for
    /// every existing user), and keeps the issuers' subjects the operator
    /// blocked, by container, with when they were blocked.
    static let namesVersion = [
        "ALTER TABLE users ADD COLUMN given_name TEXT",
        "ALTER TABLE users ADD COLUMN family_name TEXT",
        """
        CREATE TABLE blocked_identities (container TEXT NOT NULL, issuer TEXT NOT NULL, subject TEXT NOT NULL,
            blocked INTEGER NOT NULL, PRIMARY KEY (container, issuer, subject))
        """,
    ]
}
