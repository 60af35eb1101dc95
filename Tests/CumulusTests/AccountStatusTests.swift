import Testing

@testable import Cumulus

/// One rule maps a failed `users/current` to a status, for every database and the engine.
@Suite("AccountStatus")
struct AccountStatusTests {
    @Test(
        "each failure tells its own status: signed out, refused credentials, restricted, unreachable, unknown",
        arguments: [
            (CloudError.Code.authenticationRequired, AccountStatus.noAccount),
            (.authenticationFailed, .credentialsRefused),
            (.accessDenied, .restricted),
            (.networkFailure, .temporarilyUnavailable),
            (.throttled, .temporarilyUnavailable),
            (.tryAgainLater, .temporarilyUnavailable),
            (.internalError, .temporarilyUnavailable),
            (.badRequest, .couldNotDetermine),
        ])
    func statusOfAFailure(code: CloudError.Code, status: AccountStatus) {
        #expect(AccountStatus(after: CloudError(code, reason: "x")) == status)
    }

    /// A database that fails `users/current` with one error.
    struct Failing: CloudDatabase {
        let error: CloudError
        var scope: DatabaseScope { .private }
        func modifyRecords(_: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
            throw error
        }
        func lookupRecords(_: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
            throw error
        }
        func queryRecords(
            _: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
        ) async throws -> QueryResult { throw error }
        func fetchZoneChanges(_: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
            throw error
        }
        func fetchDatabaseChanges(since: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges { throw error }
        func listZones() async throws -> [RecordZone] { throw error }
        func lookupZones(_: [ZoneID]) async throws -> [ZoneResult] { throw error }
        func modifyZones(_: [ZoneOperation]) async throws -> [ZoneResult] { throw error }
        func modifySubscriptions(_: [SubscriptionOperation]) async throws -> [SubscriptionResult] { throw error }
        func listSubscriptions() async throws -> [Subscription] { throw error }
        func lookupSubscriptions(_: [String]) async throws -> [SubscriptionResult] { throw error }
        func currentUser() async throws -> UserIdentity { throw error }
        func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { throw error }
        func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { throw error }
        func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] { throw error }
        func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] { throw error }
        func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] { throw error }
        func notifications() -> AsyncStream<CloudNotification> { AsyncStream { $0.finish() } }
    }

    @Test("a database and an engine tell the same status for the same failure")
    func databaseAndEngineAgree() async throws {
        for code in [CloudError.Code.networkFailure, .authenticationFailed, .authenticationRequired] {
            let database = Failing(error: CloudError(code, reason: "x"))
            let fromDatabase = await database.accountStatus()
            let engine = try await SyncEngine<Note>(
                database: database, directory: temporaryDirectory("status"),
                configuration: SyncConfiguration(
                    automaticSync: false, retryPolicy: RetryPolicy(jitter: 0, maximumAttempts: 1)))
            var statuses = engine.accountStatus.makeAsyncIterator()
            await #expect(throws: CloudError.self) { try await engine.sync() }
            #expect(await statuses.next() == fromDatabase, "\(code)")
            await engine.close()
        }
    }
}
