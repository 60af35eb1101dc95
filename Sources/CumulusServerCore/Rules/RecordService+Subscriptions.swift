import CloudCodable
import CloudProtocol

extension RecordService {
    /// `subscriptions/modify`: subscriptions belong to the user, not the device.
    ///
    /// A query subscription keeps its query's record type and filters (its
    /// sort means nothing to a notification). A query that `records/query`
    /// would refuse makes the whole request a `BAD_REQUEST`, as it does
    /// there; one that can never fire, or in the shared database (whose
    /// zones' records belong to their owners' subscriptions), is a
    /// `BAD_REQUEST` entry.
    func modifySubscriptions(_ operations: [SubscriptionOperation], context: RequestContext) async throws
        -> [SubscriptionResult]
    {
        try ServerLimits.checkItemCount(operations.count, of: "operations")
        var identifiers = Set<ExactName>()
        for operation in operations {
            let identifier: String
            switch operation {
            case .save(let subscription): identifier = subscription.subscriptionID
            case .delete(let id): identifier = id
            }
            guard identifiers.insert(ExactName(identifier)).inserted else {
                throw CloudError(
                    .badRequest,
                    reason: "subscription '\(identifier)' appears in more than one operation of the request")
            }
            if case .save(let subscription) = operation, case .query(let query, _) = subscription.kind {
                do {
                    try QueryEvaluation.validate(query)
                } catch let error as CloudError {
                    throw CloudError(.badRequest, reason: "subscription '\(identifier)': \(error.reason)")
                }
            }
        }
        let key = context.key
        let user = context.subscriber
        return try await storage.write { transaction in
            guard let database = try await transaction.database(key) else {
                throw CloudError(.internalError, reason: "the database has no row")
            }
            let zoneNames = Set(
                try await transaction.zones(inDatabase: database.id, named: nil).map { ExactName($0.name) })
            var results: [SubscriptionResult] = []
            for operation in operations {
                switch operation {
                case .save(let subscription):
                    guard !subscription.subscriptionID.isEmpty else {
                        results.append(.failure(CloudError(.badRequest, reason: "the subscription has no identifier")))
                        continue
                    }
                    if let refusal = Self.queryRefusal(of: subscription, in: key.scope) {
                        results.append(.failure(refusal))
                        continue
                    }
                    guard let name = context.ownZoneName(subscription.zoneID), zoneNames.contains(ExactName(name))
                    else {
                        results.append(.failure(ServerLimits.zoneNotFound(subscription.zoneID, recordName: nil)))
                        continue
                    }
                    var stored = Subscription(
                        subscriptionID: subscription.subscriptionID, zoneID: ZoneID(zoneName: name))
                    if case .query(let query, let firesOn) = subscription.kind {
                        stored.kind = .query(
                            RecordQuery(recordType: query.recordType, filters: query.filters), firesOn: firesOn)
                    }
                    try await transaction.saveSubscription(
                        StoredSubscription(user: user, subscription: stored), inDatabase: database.id)
                    results.append(.subscription(stored))
                case .delete(let identifier):
                    if try await transaction.deleteSubscription(identifier, user: user, inDatabase: database.id) {
                        results.append(.deleted(identifier))
                    } else {
                        results.append(.failure(Self.notFound(subscription: identifier)))
                    }
                }
            }
            return results
        }
    }

    /// `subscriptions/list`: by identifier.
    func listSubscriptions(context: RequestContext) async throws -> [Subscription] {
        try await storedSubscriptions(context).sorted { ExactName($0.subscriptionID) < ExactName($1.subscriptionID) }
    }

    /// `subscriptions/lookup`.
    func lookupSubscriptions(_ identifiers: [String], context: RequestContext) async throws -> [SubscriptionResult] {
        try ServerLimits.checkItemCount(identifiers.count, of: "subscriptions")
        let saved = Dictionary(
            try await storedSubscriptions(context).map { (ExactName($0.subscriptionID), $0) }, uniquingKeysWith: { $1 })
        return identifiers.map { identifier in
            saved[ExactName(identifier)].map(SubscriptionResult.subscription)
                ?? .failure(Self.notFound(subscription: identifier))
        }
    }

    private func storedSubscriptions(_ context: RequestContext) async throws -> [Subscription] {
        let key = context.key
        let user = context.subscriber
        return try await storage.read { transaction in
            guard let database = try await transaction.database(key) else { return [] }
            return try await transaction.subscriptions(inDatabase: database.id, user: user).map(\.subscription)
        }
    }

    /// Why a query subscription is refused (`BAD_REQUEST`): it can never
    /// fire, or the database does not take it; `nil` to accept it.
    private static func queryRefusal(of subscription: Subscription, in scope: DatabaseScope) -> CloudError? {
        guard case .query(_, let firesOn) = subscription.kind else { return nil }
        let identifier = subscription.subscriptionID
        guard scope != .shared else {
            return CloudError(
                .badRequest,
                reason: "subscription '\(identifier)': query subscriptions are not available in the shared database")
        }
        guard !firesOn.isEmpty else {
            return CloudError(.badRequest, reason: "subscription '\(identifier)' fires on nothing: firesOn is empty")
        }
        return nil
    }

    private static func notFound(subscription identifier: String) -> CloudError {
        CloudError(.notFound, reason: "there is no subscription '\(identifier)'")
    }
}
