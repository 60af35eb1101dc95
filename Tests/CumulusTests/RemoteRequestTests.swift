import CloudCodable
import Foundation
import Testing

@testable import Cumulus

/// A transport that records every request and answers with `handler`.
final class RecordingTransport: CloudTransport, @unchecked Sendable {
    // Safety: `sent` is touched only while `lock` is held.
    private let lock = NSLock()
    private var sent: [CloudHTTPRequest] = []
    private let handler: @Sendable (CloudHTTPRequest) throws -> CloudHTTPResponse

    init(handler: @escaping @Sendable (CloudHTTPRequest) throws -> CloudHTTPResponse) {
        self.handler = handler
    }

    /// A transport that answers every request with `response`.
    convenience init(answering response: CloudResponse) {
        self.init { _ in CloudHTTPResponse(status: 200, body: try response.encodedBody()) }
    }

    var requests: [CloudHTTPRequest] {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        record(request)
        return try handler(request)
    }

    private func record(_ request: CloudHTTPRequest) {
        lock.lock()
        defer { lock.unlock() }
        sent.append(request)
    }
}

/// Tokens with the characters a query must escape.
enum RemoteFixture {
    static let apiToken = "api+Token/with=Chars"
    static let webAuthToken = "web&Auth token+/=?#"
    static let otherWebAuthToken = "second+User/Token="
    static let baseURL = URL(string: "https://cloud.example.com/prefix/")!

    static func configuration(scope: DatabaseScope = .private) -> RemoteCloudDatabase.Configuration {
        RemoteCloudDatabase.Configuration(
            baseURL: baseURL, container: "iCloud.com.example.notes", environment: .production, scope: scope,
            currentDate: { Date(timeIntervalSince1970: 1_700_000_000) })
    }

    static func database(
        _ transport: any CloudTransport, scope: DatabaseScope = .private,
        credentials: RemoteCloudDatabase.Credentials = .user(apiToken: apiToken, webAuthToken: webAuthToken)
    ) -> RemoteCloudDatabase {
        RemoteCloudDatabase(configuration: configuration(scope: scope), credentials: credentials, transport: transport)
    }

    static func query(of url: URL) -> [String: String] {
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        return Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
    }
}

@Suite("RemoteCloudDatabase requests")
struct RemoteRequestTests {
    let zone = ZoneID(zoneName: "Notes")

    /// Calls one operation of `database`, whatever it answers.
    private func call(_ operation: CloudOperation, on database: RemoteCloudDatabase) async throws {
        let record = Record(recordType: "Note", recordName: "n1", zoneID: zone, fields: ["title": .string("a")])
        switch operation {
        case .modifyRecords: _ = try await database.modifyRecords([.init(.create, record)], zoneID: zone, atomic: true)
        case .lookupRecords: _ = try await database.lookupRecords(["n1"], zoneID: zone, desiredKeys: nil)
        case .queryRecords:
            _ = try await database.queryRecords(
                RecordQuery(recordType: "Note"), zoneID: zone, resultsLimit: 10, continuationMarker: nil,
                desiredKeys: nil)
        case .fetchZoneChanges: _ = try await database.fetchZoneChanges([ZoneChangesRequest(zoneID: zone)])
        case .fetchDatabaseChanges: _ = try await database.fetchDatabaseChanges(since: nil, resultsLimit: nil)
        case .listZones: _ = try await database.listZones()
        case .lookupZones: _ = try await database.lookupZones([zone])
        case .modifyZones: _ = try await database.modifyZones([.create(zone)])
        case .modifySubscriptions:
            _ = try await database.modifySubscriptions([.save(Subscription(subscriptionID: "s", zoneID: zone))])
        case .listSubscriptions: _ = try await database.listSubscriptions()
        case .lookupSubscriptions: _ = try await database.lookupSubscriptions(["s"])
        case .currentUser: _ = try await database.currentUser()
        case .createToken: _ = database.notifications()
        case .resolveShares: _ = try await database.resolveShares([ShareLookup(shortGUID: "g1")])
        case .acceptShares: _ = try await database.acceptShares([ShareLookup(shortGUID: "g1")])
        case .lookupUsersByEmail: _ = try await database.lookupUsers(emailAddresses: ["bob@example.com"])
        case .lookupUsersByID: _ = try await database.lookupUsers(userRecordNames: ["_bob"])
        case .discoverUsers: _ = try await database.discoverUsers([.email("bob@example.com")])
        case .requestAssetUploads:
            _ = try await database.requestAssetUploads(
                [AssetUploadRequest(recordName: "n1", recordType: "Note", fieldName: "photo")], zoneID: zone)
        case .fetchRecordChanges, .fetchChangedZones:
            Issue.record("\(operation.rawValue) is served for other clients; RemoteCloudDatabase does not send it")
        }
    }

    /// The answer the server gives to `operation`, for the call above.
    private func answer(to operation: CloudOperation) -> CloudResponse {
        let record = Record(recordType: "Note", recordName: "n1", zoneID: zone, fields: ["title": .string("a")])
        switch operation {
        case .modifyRecords, .lookupRecords: return .records([.record(record)])
        case .queryRecords: return .query(QueryResult(records: [record], continuationMarker: nil))
        case .fetchZoneChanges:
            return .zoneChanges([
                .success(ZoneChanges(zoneID: zone, records: [], syncToken: SyncToken(rawValue: "t"), moreComing: false))
            ])
        case .fetchDatabaseChanges:
            return .databaseChanges(
                DatabaseChanges(
                    changedZones: [zone], deletedZones: [], syncToken: SyncToken(rawValue: "d"), moreComing: false))
        case .listZones: return .zones([RecordZone(zoneID: zone)])
        case .lookupZones, .modifyZones: return .zoneResults([.zone(RecordZone(zoneID: zone))])
        case .modifySubscriptions, .lookupSubscriptions:
            return .subscriptionResults([.subscription(Subscription(subscriptionID: "s", zoneID: zone))])
        case .listSubscriptions: return .subscriptions([Subscription(subscriptionID: "s", zoneID: zone)])
        case .currentUser: return .user(UserIdentity(userRecordName: "_alice"))
        case .createToken:
            return .token(NotificationToken(apnsEnvironment: "production", apnsToken: "t", webcourierURL: "/poll/t"))
        case .fetchRecordChanges:
            return .recordChanges(
                ZoneChanges(zoneID: zone, records: [], syncToken: SyncToken(rawValue: "t"), moreComing: false))
        case .fetchChangedZones:
            return .databaseChanges(
                DatabaseChanges(
                    changedZones: [], deletedZones: [], syncToken: SyncToken(rawValue: "d"), moreComing: false))
        case .resolveShares, .acceptShares:
            return .shares([.failure(shortGUID: "g1", CloudError(.notFound, reason: "no such share"))])
        case .lookupUsersByEmail, .lookupUsersByID, .discoverUsers:
            return .users([UserIdentity(userRecordName: "_bob")])
        case .requestAssetUploads:
            return .assetUploads([AssetUploadTarget(recordName: "n1", fieldName: "photo", url: "/assets/1/upload/t")])
        }
    }

    @Test(
        "each operation goes to its path with its method, the tokens in the query",
        arguments: CloudOperation.allCases.filter {
            ![.createToken, .fetchRecordChanges, .fetchChangedZones].contains($0)
        })
    func pathAndMethod(operation: CloudOperation) async throws {
        let transport = RecordingTransport(answering: answer(to: operation))
        let database = RemoteFixture.database(transport)
        try await call(operation, on: database)
        let request = try #require(transport.requests.first)
        #expect(transport.requests.count == 1)
        #expect(request.method == operation.httpMethod)
        #expect(
            request.url.path
                == "/prefix/database/1/iCloud.com.example.notes/production/"
                + "\((operation.fixedScope ?? .private).rawValue)/\(operation.rawValue)")
        #expect(
            RemoteFixture.query(of: request.url) == [
                "ckAPIToken": RemoteFixture.apiToken, "ckWebAuthToken": RemoteFixture.webAuthToken,
            ])
        #expect(request.headers["Accept"] == "application/json")
        if operation.httpMethod == "GET" {
            #expect(request.body == nil)
            #expect(request.headers["Content-Type"] == nil)
        } else {
            let body = try #require(request.body)
            _ = try CloudRequest.decode(operation, body: body)
            #expect(request.headers["Content-Type"] == "application/json; charset=utf-8")
        }
        #expect(request.timeout == .seconds(60))
        #expect(request.headers[CloudRequestSigning.signatureHeader] == nil)
    }

    @Test("answers come back decoded")
    func decodedAnswers() async throws {
        let record = Record(recordType: "Note", recordName: "n1", zoneID: zone, fields: ["title": .string("a")])
        let database = RemoteFixture.database(RecordingTransport(answering: .records([.record(record)])))
        let results = try await database.lookupRecords(["n1"], zoneID: zone, desiredKeys: nil)
        #expect(results.first?.record?.recordName == "n1")
        #expect(results.first?.record?["title"] == .string("a"))
        let user = RemoteFixture.database(RecordingTransport(answering: .user(UserIdentity(userRecordName: "_bob"))))
        #expect(try await user.currentUser().userRecordName == "_bob")
        #expect(await user.accountStatus() == .available)
    }

    @Test("the request body is what the codec encodes")
    func body() async throws {
        let transport = RecordingTransport(answering: .records([.deleted(recordName: "n1", zoneID: zone)]))
        let database = RemoteFixture.database(transport)
        let record = Record(recordType: "Note", recordName: "n1", zoneID: zone)
        _ = try await database.modifyRecords([.init(.forceDelete, record)], zoneID: zone, atomic: false)
        let body = try #require(transport.requests.first?.body)
        #expect(
            try CloudRequest.decode(.modifyRecords, body: body)
                == .modifyRecords(operations: [.init(.forceDelete, record)], zoneID: zone, atomic: false))
    }

    @Test("an answer with the wrong number of results is an error, not a misaligned result")
    func resultCount() async throws {
        let record = Record(recordType: "Note", recordName: "n1", zoneID: zone)
        let database = RemoteFixture.database(RecordingTransport(answering: .records([.record(record)])))
        let error = try await #require(throws: CloudError.self) {
            _ = try await database.lookupRecords(["n1", "n2"], zoneID: zone, desiredKeys: nil)
        }
        #expect(error.code == .internalError)
    }

    @Test("every token is percent-encoded in the query, so +, / and = survive")
    func percentEncoding() async throws {
        let transport = RecordingTransport(answering: .zones([]))
        _ = try await RemoteFixture.database(transport).listZones()
        let query = try #require(transport.requests.first?.url.query)
        #expect(query.contains("ckAPIToken=api%2BToken%2Fwith%3DChars"))
        #expect(query.contains("ckWebAuthToken=web%26Auth%20token%2B%2F%3D%3F%23"))
        #expect(RemoteSession.percentEncoded("aZ09-._~ é") == "aZ09-._~%20%C3%A9")
    }

    @Test("signed out: the user token is left out")
    func signedOut() async throws {
        let transport = RecordingTransport(answering: .zones([]))
        let database = RemoteFixture.database(
            transport, credentials: .user(apiToken: RemoteFixture.apiToken, webAuthToken: nil))
        _ = try await database.listZones()
        let request = try #require(transport.requests.first)
        #expect(RemoteFixture.query(of: request.url) == ["ckAPIToken": RemoteFixture.apiToken])
    }

    @Test("a view bound to an account check sends nothing once the account changed; a new API token is no change")
    func boundToTheCheckedAccount() async throws {
        let transport = RecordingTransport { request in
            let body: CloudResponse =
                request.url.path.hasSuffix("users/current")
                ? .user(UserIdentity(userRecordName: "_alice")) : .zones([])
            return CloudHTTPResponse(status: 200, body: try body.encodedBody())
        }
        let database = RemoteFixture.database(transport)
        let check = try await database.checkAccount()
        #expect(check.user.userRecordName == "_alice")
        let bound = database.bound(to: check)
        _ = try await bound.listZones()
        database.setCredentials(.user(apiToken: "another+API/token", webAuthToken: RemoteFixture.webAuthToken))
        _ = try await bound.listZones()
        #expect(transport.requests.count == 3)

        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.otherWebAuthToken))
        await #expect {
            _ = try await bound.listZones()
        } throws: { error in
            (error as? CloudError)?.code == .accountChanged
        }
        #expect(transport.requests.count == 3, "the refused request was not sent")
        // The database itself and a view bound to a new check go on as the new account.
        _ = try await database.listZones()
        let again = try await database.checkAccount()
        #expect(again.generation != check.generation)
        _ = try await database.bound(to: again).listZones()
        #expect(transport.requests.count == 6)
    }

    @Test("each request is sent with the credentials set when it starts")
    func switchingCredentials() async throws {
        let transport = RecordingTransport(answering: .zones([]))
        let database = RemoteFixture.database(transport)
        _ = try await database.listZones()
        database.setCredentials(.user(apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.otherWebAuthToken))
        _ = try await database.listZones()
        let tokens = transport.requests.map { RemoteFixture.query(of: $0.url)["ckWebAuthToken"] }
        #expect(tokens == [RemoteFixture.webAuthToken, RemoteFixture.otherWebAuthToken])
    }
}
