import Cumulus
import CumulusServerCore

extension InMemoryCloudServer {
    /// Deletes everything `user` owns or takes part in, as `cumulus user
    /// remove --delete-data` does on the record server: their zones (the
    /// default zone's records too) and the shares of those zones, whose
    /// participants see the zone leave their shared database; the records
    /// they created in the public database; their place in other users'
    /// shares; their subscriptions and notification channels.
    ///
    /// ```swift
    /// try await server.deleteData(ofUser: "alice")   // Alice deleted her account
    /// ```
    public nonisolated func deleteData(ofUser user: String) async throws {
        _ = try await service.deleteData(ofUser: user, container: Self.container)
    }
}
