import Cumulus

extension InMemoryCloudServer {
    /// Tells the listeners of a database that zones changed.
    ///
    /// Every handle signed in to the database with a stream open hears,
    /// before the write's answer returns: `.zoneChanged(zone, subscriptionID:)`
    /// for each of its user's subscriptions on each changed zone, then
    /// `.databaseChanged` (except in the public database, which has no
    /// database changes to fetch). The handle that wrote hears them too.
    func notify(_ key: DatabaseKey, changedZones: [String]) {
        let scope = key.scope
        for listener in controls.listeners(in: scope) where DatabaseKey(scope: scope, user: listener.account) == key {
            let owner = SubscriptionOwner(user: listener.account, scope: scope)
            let watched = (subscriptions[owner] ?? [:]).values.sorted { $0.subscriptionID < $1.subscriptionID }
            var notifications: [CloudNotification] = []
            for zoneName in changedZones {
                for subscription in watched where subscription.zoneID.zoneName == zoneName {
                    notifications.append(
                        .zoneChanged(canonicalZoneID(zoneName), subscriptionID: subscription.subscriptionID))
                }
            }
            if scope != .public { notifications.append(.databaseChanged) }
            for stream in listener.streams {
                for notification in notifications { stream.yield(notification) }
            }
        }
    }
}
