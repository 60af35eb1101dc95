import Foundation

extension CloudResponse {
    /// The answer with a fresh `uuid` on every per-item error that has
    /// none, as whole-request errors carry one: a client quoting it points
    /// at one failure in the server's log.
    public func identifyingErrors() -> CloudResponse {
        switch self {
        case .records(let results): .records(results.map(Self.identifying))
        case .recordChanges(var changes):
            .recordChanges(Self.identifying(&changes))
        case .zoneChanges(let zones):
            .zoneChanges(
                zones.map { result in
                    switch result {
                    case .success(var changes): .success(Self.identifying(&changes))
                    case .failure(let error): .failure(Self.identifying(error))
                    }
                })
        case .zoneResults(let results):
            .zoneResults(
                results.map { result in
                    if case .failure(let error) = result { return .failure(Self.identifying(error)) }
                    return result
                })
        case .subscriptionResults(let results):
            .subscriptionResults(
                results.map { result in
                    if case .failure(let error) = result { return .failure(Self.identifying(error)) }
                    return result
                })
        case .shares(let results):
            .shares(
                results.map { result in
                    if case .failure(let shortGUID, let error) = result {
                        return .failure(shortGUID: shortGUID, Self.identifying(error))
                    }
                    return result
                })
        case .query, .databaseChanges, .zones, .subscriptions, .user, .users, .token, .assetUploads: self
        }
    }

    package static func identifying(_ error: CloudError) -> CloudError {
        guard error.uuid == nil else { return error }
        var error = error
        error.uuid = UUID().uuidString
        return error
    }

    private static func identifying(_ result: RecordResult) -> RecordResult {
        if case .failure(let error) = result { return .failure(identifying(error)) }
        return result
    }

    private static func identifying(_ changes: inout ZoneChanges) -> ZoneChanges {
        changes.records = changes.records.map(identifying)
        return changes
    }
}
