import AsyncHTTPClient
import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// A server with the console on, over a fresh SQLite store, and a console
/// token; its client keeps no cookies and follows no redirects, so each
/// test says exactly what it sends.
struct ConsoleTestServer: Sendable {
    let server: RunningServer
    let token: String
    let client: HTTPClient

    var service: CloudService { server.service }
    var container: String { server.container }
    var baseURL: String { server.baseURL.absoluteString }

    static func with(
        store: TestStore = .sqlite, log: LogLines? = nil, _ body: @Sendable (ConsoleTestServer) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration(port: 0, logger: log?.logger() ?? quietLogger)
        configuration.console = ConsoleConfiguration()
        let server = try await RunningServer.start(
            store: store, configuration: configuration, logLevel: log == nil ? .warning : .notice)
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        do {
            let token = try await server.service.addConsoleToken(label: "tests").token
            try await body(ConsoleTestServer(server: server, token: token, client: client))
        } catch {
            try? await client.shutdown()
            await server.stop()
            throw error
        }
        try await client.shutdown()
        await server.stop()
    }

    /// One request; `session` is sent as the console's cookie.
    func send(
        _ method: HTTPMethod, _ path: String, session: String? = nil, form: [(String, String)]? = nil, on index: Int = 0
    ) async throws -> ConsoleAnswer {
        var request = HTTPClientRequest(url: server.baseURLs[index].absoluteString + path)
        request.method = method
        if let session { request.headers.add(name: "Cookie", value: "cumulus_console=\(session)") }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            let text = form.map { "\(Self.encoded($0.0))=\(Self.encoded($0.1))" }.joined(separator: "&")
            request.body = .bytes(ByteBuffer(string: text))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 16 << 20)
        return ConsoleAnswer(status: Int(response.status.code), headers: response.headers, body: String(buffer: body))
    }

    /// A query or form value percent-encoded but for RFC 3986's unreserved bytes.
    static func encoded(_ text: String) -> String {
        let unreserved = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// `path` with `parameters` as its query.
    static func link(_ path: String, _ parameters: [(String, String)]) -> String {
        path + "?" + parameters.map { "\(encoded($0.0))=\(encoded($0.1))" }.joined(separator: "&")
    }

    func get(_ path: String, session: String? = nil) async throws -> ConsoleAnswer {
        try await send(.GET, path, session: session)
    }

    /// Signs in with `token` (the test token by default) and returns the session's cookie value.
    func signIn(token: String? = nil) async throws -> String {
        let answer = try await send(.POST, "/console/sign-in", form: [("token", token ?? self.token)])
        #expect(answer.status == 303)
        let cookie = try #require(answer.headers["Set-Cookie"].first)
        let value = cookie.split(separator: ";")[0].split(separator: "=", maxSplits: 1)[1]
        return String(value)
    }

    /// The CSRF token a signed-in page carries in its sign-out form.
    func csrf(session: String) async throws -> String {
        let home = try await get("/console", session: session)
        return try #require(home.hiddenValue("csrf"))
    }

    /// alice's zone "Albums" with a root record (of `rootType`) shared
    /// read-only, a photo under it and a photo outside it; bob accepts the
    /// share. The two users' record names.
    func shareAlbum(rootType: String) async throws -> (alice: String, bob: String) {
        let alice = try await server.user("alice").recordName
        let bob = try await server.user("bob").recordName
        let zone = ZoneID(zoneName: "Albums")
        var root = Record(recordType: rootType, recordName: "album", zoneID: zone, fields: ["t": .string("a")])
        root.share = "album-share"
        var child = Record(recordType: "Photo", recordName: "photo", zoneID: zone, fields: ["t": .string("p")])
        child.parent = "album"
        let other = Record(recordType: "Photo", recordName: "unshared", zoneID: zone, fields: ["t": .string("u")])
        var share = Record(recordType: ShareDetails.recordType, recordName: "album-share", zoneID: zone)
        share.shareDetails = ShareDetails(publicPermission: .readOnly, participants: [])
        let saved = try await seed(user: "alice", zone: "Albums", records: [root, child, other, share])
        let handles = saved.compactMap { record in record.shareDetails?.shortGUID }
        let shortGUID = try #require(handles.first)
        let bobPublic = Caller(container: container, environment: .development, scope: .public, user: bob)
        _ = try await service.perform(.acceptShares([ShareLookup(shortGUID: shortGUID)]), as: bobPublic)
        return (alice, bob)
    }

    /// Shares alice's zone `zoneName` whole, read-only, and bob accepts.
    func shareZone(_ zoneName: String, ofAlice alice: String, withBob bob: String) async throws {
        let owner = Caller(container: container, environment: .development, scope: .private, user: alice)
        let zone = ZoneID(zoneName: zoneName)
        var share = Record(recordType: ShareDetails.recordType, recordName: ShareDetails.zoneShareName, zoneID: zone)
        share.shareDetails = ShareDetails(publicPermission: .readOnly, participants: [])
        guard
            case .records(let saved) = try await service.perform(
                .modifyRecords(operations: [RecordOperation(.create, share)], zoneID: zone, atomic: true), as: owner)
        else { throw CloudError(.internalError, reason: "records/modify answered something else") }
        let shortGUID = try #require(saved.first?.record?.shareDetails?.shortGUID)
        let bobPublic = Caller(container: container, environment: .development, scope: .public, user: bob)
        _ = try await service.perform(.acceptShares([ShareLookup(shortGUID: shortGUID)]), as: bobPublic)
    }

    /// A private zone of `user` with `records`, made as the user's own requests.
    @discardableResult
    func seed(user: String, zone: String, records: [Record], creatingZone: Bool = true) async throws -> [Record] {
        let recordName = try await server.user(user).recordName
        let caller = Caller(container: container, environment: .development, scope: .private, user: recordName)
        let zoneID = ZoneID(zoneName: zone)
        if creatingZone { _ = try await service.perform(.modifyZones([.create(zoneID)]), as: caller) }
        let operations = records.map { record -> RecordOperation in
            var record = record
            record.zoneID = zoneID
            return RecordOperation(.create, record)
        }
        guard
            case .records(let results) = try await service.perform(
                .modifyRecords(operations: operations, zoneID: zoneID, atomic: true), as: caller)
        else { throw CloudError(.internalError, reason: "records/modify answered something else") }
        return try results.map { try #require($0.record, "\($0)") }
    }

    /// The record as its owner's `records/lookup` finds it, or `nil` once deleted.
    func lookUp(_ name: String, zone: String, user: String) async throws -> Record? {
        let recordName = try await server.user(user).recordName
        let caller = Caller(container: container, environment: .development, scope: .private, user: recordName)
        guard
            case .records(let results) = try await service.perform(
                .lookupRecords(recordNames: [name], zoneID: ZoneID(zoneName: zone), desiredKeys: nil), as: caller)
        else { throw CloudError(.internalError, reason: "records/lookup answered something else") }
        return results.first?.record
    }

    /// The parameters of a console link to a zone of `user`'s private database.
    func zoneParameters(user: String, zone: String, scope: String = "private", owner: String = "") async throws
        -> [(String, String)]
    {
        let recordName = try await server.user(user).recordName
        return [
            ("container", container), ("environment", "development"), ("scope", scope), ("user", recordName),
            ("zone", zone), ("owner", owner),
        ]
    }
}

/// A console answer.
struct ConsoleAnswer: Sendable {
    let status: Int
    let headers: HTTPHeaders
    let body: String

    /// The value of the first hidden input named `name`.
    func hiddenValue(_ name: String) -> String? {
        guard let start = body.range(of: "name=\"\(name)\" value=\"") else { return nil }
        let rest = body[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}
