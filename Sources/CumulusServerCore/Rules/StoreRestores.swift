import CloudCodable
import CloudProtocol

/// What a server does when its store was put back from a backup, or is
/// otherwise not the one it last wrote (a data directory copied to another
/// disk, a PostgreSQL dump restored into a new database).
///
/// The store rewound: devices hold tokens and change tags of writes it no
/// longer has, and its serials will count up through those values again.
/// So every database's and zone's incarnation is drawn anew, which makes
/// every earlier sync token expired (each device fetches its zones from the
/// start, drops what the store lost, and sends again what it had not seen
/// acknowledged) and keeps every new change tag apart from the old ones;
/// and every notification channel is forgotten, whose cursors count in the
/// old serials (its client opens another and fetches).
///
/// A store names what it is with an identity that a restore changes but a
/// restart does not (a SQLite file's device and inode, a PostgreSQL
/// database's system identifier and OID), and records it; a store that
/// recorded none, as one from before this check, is taken as restored.
public enum StoreRestores {
    /// Renews the store when `identity` is not the one it recorded, and
    /// records it; returns whether it renewed. Run it in a write
    /// transaction when the store opens, before any request.
    @discardableResult
    public static func takeNotice(of identity: String, in transaction: any StorageTransaction) async throws -> Bool {
        if let recorded = try await transaction.storeIdentity(), recorded.isExactly(identity) { return false }
        try await transaction.renewIncarnations(below: ServerChangeToken.incarnationBound)
        try await transaction.deleteAllChannels()
        try await transaction.setStoreIdentity(identity)
        return true
    }
}
