import Cumulus
import Foundation

extension CloudService {
    /// Publishes another server's write (or a catch-up after announcements
    /// may have been lost) to this server's channels.
    func receive(_ event: ChangeBroadcastEvent) async {
        switch event {
        case .changed(let announcement):
            // Most announcements concern databases nobody here listens to: no read for those.
            guard hub.hasListeners(for: announcement.key) else { return }
            await publishRemote(announcement.key, zoneNames: announcement.zoneNames)
        case .mayHaveMissed:
            for key in hub.listenedDatabases() {
                if key.scope == .public {
                    // The public database has no `.databaseChanged`: its clients fetch on their subscriptions.
                    await publishRemote(key, zoneNames: nil)
                } else {
                    hub.publish(key: key, changedZones: [], subscriptions: [])
                }
            }
        }
    }

    /// Publishes a write to `key` made elsewhere, reading the database's
    /// subscriptions (the writer's server read them in its transaction);
    /// unknown zones count as every subscribed zone.
    private func publishRemote(_ key: DatabaseKey, zoneNames: [String]?) async {
        let subscriptions: [StoredSubscription]
        do {
            subscriptions = try await storage.read { transaction in
                guard let database = try await transaction.database(key) else { return [] }
                return try await transaction.subscriptions(inDatabase: database.id, user: nil)
            }
        } catch {
            // Still wake the polls: `.databaseChanged` makes private and shared clients fetch.
            subscriptions = []
        }
        let zones = zoneNames ?? Array(Set(subscriptions.map(\.subscription.zoneID.zoneName))).sorted()
        hub.publish(key: key, changedZones: zones, subscriptions: subscriptions)
    }
}
