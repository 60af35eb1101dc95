import Cumulus

extension InMemoryCloudServer {
    /// `subscriptions/modify`.
    func modifySubscriptions(_ operations: [SubscriptionOperation], caller: Caller) throws -> [SubscriptionResult] {
        try checkItemCount(operations.count, of: "operations")
        var identifiers = Set<String>()
        for operation in operations {
            let identifier: String
            switch operation {
            case .save(let subscription): identifier = subscription.subscriptionID
            case .delete(let id): identifier = id
            }
            guard identifiers.insert(identifier).inserted else {
                throw CloudError(
                    .badRequest,
                    reason: "subscription '\(identifier)' appears in more than one operation of the request")
            }
        }
        let database = database(caller.databaseKey)
        let owner = SubscriptionOwner(user: caller.user, scope: caller.scope)
        var saved = subscriptions[owner] ?? [:]
        defer { subscriptions[owner] = saved }
        return operations.map { operation in
            switch operation {
            case .save(let subscription):
                guard !subscription.subscriptionID.isEmpty else {
                    return .failure(CloudError(.badRequest, reason: "the subscription has no identifier"))
                }
                guard let name = ownZoneName(subscription.zoneID, user: caller.user), database.zones[name] != nil
                else {
                    return .failure(zoneNotFound(subscription.zoneID, recordName: nil))
                }
                let stored = Subscription(subscriptionID: subscription.subscriptionID, zoneID: canonicalZoneID(name))
                saved[stored.subscriptionID] = stored
                return .subscription(stored)
            case .delete(let identifier):
                guard saved.removeValue(forKey: identifier) != nil else {
                    return .failure(notFound(subscription: identifier))
                }
                return .deleted(identifier)
            }
        }
    }

    /// `subscriptions/list`: by identifier.
    func listSubscriptions(caller: Caller) -> [Subscription] {
        let saved = subscriptions[SubscriptionOwner(user: caller.user, scope: caller.scope)] ?? [:]
        return saved.values.sorted { $0.subscriptionID < $1.subscriptionID }
    }

    /// `subscriptions/lookup`.
    func lookupSubscriptions(_ identifiers: [String], caller: Caller) throws -> [SubscriptionResult] {
        try checkItemCount(identifiers.count, of: "subscriptions")
        let saved = subscriptions[SubscriptionOwner(user: caller.user, scope: caller.scope)] ?? [:]
        return identifiers.map { identifier in
            saved[identifier].map(SubscriptionResult.subscription) ?? .failure(notFound(subscription: identifier))
        }
    }

    private func notFound(subscription identifier: String) -> CloudError {
        CloudError(.notFound, reason: "there is no subscription '\(identifier)'")
    }
}
