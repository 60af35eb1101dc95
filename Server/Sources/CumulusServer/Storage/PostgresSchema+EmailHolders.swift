import PostgresNIO

extension PostgresSchema {
    /// Version eight gives an address one holder per container: where
    /// several users held one address, the one the operator provisioned
    /// (no identity maps to it) keeps it if they alone were provisioned,
    /// and otherwise nobody does (no sort order picks a winner); then a
    /// unique index keeps it so.
    static let emailHoldersVersion: [PostgresQuery] = [
        """
        CREATE TEMP TABLE email_holders_cleared AS SELECT u.container, u.record_name FROM users u
            WHERE u.email_address IS NOT NULL
            AND EXISTS (SELECT 1 FROM users o WHERE o.container = u.container
                AND o.email_address = u.email_address AND o.record_name <> u.record_name)
            AND (EXISTS (SELECT 1 FROM user_identities i
                    WHERE i.container = u.container AND i.user_record_name = u.record_name)
                OR (SELECT count(*) FROM users o WHERE o.container = u.container
                    AND o.email_address = u.email_address
                    AND NOT EXISTS (SELECT 1 FROM user_identities i
                        WHERE i.container = o.container AND i.user_record_name = o.record_name)) > 1)
        """,
        """
        UPDATE users SET email_address = NULL
            WHERE (container, record_name) IN (SELECT container, record_name FROM email_holders_cleared)
        """,
        "DROP TABLE email_holders_cleared",
        "DROP INDEX users_by_email",
        "CREATE UNIQUE INDEX users_by_email ON users (container, email_address) WHERE email_address IS NOT NULL",
    ]
}
