/// A store that tells whether a server may serve from it: that it can be
/// read, and which schema version it holds. `/readyz` asks it.
///
/// ```swift
/// let versions = try await storage.schemaVersions()
/// if versions.stored != versions.written { print("migrate first") }
/// ```
public protocol ServerReadiness: Sendable {
    /// Reads the store's schema version; throws when the store cannot be read.
    func schemaVersions() async throws -> SchemaVersions
}

/// The schema version a store holds and the one this server writes: they
/// must be equal for the server to serve.
public struct SchemaVersions: Sendable, Hashable {
    /// The version the store holds.
    public var stored: Int
    /// The version this server creates and migrates to.
    public var written: Int

    /// Creates a pair of versions.
    public init(stored: Int, written: Int) {
        self.stored = stored
        self.written = written
    }
}

/// A store that counts the notification channels in use, for the
/// `cumulus_notification_channels_open` gauge.
protocol ChannelCensus: Sendable {
    /// The channels a poll used (or that were made) at `cutoff` or later,
    /// in milliseconds since 1970.
    func openChannelCount(usedSince cutoff: Int64) async throws -> Int
}
