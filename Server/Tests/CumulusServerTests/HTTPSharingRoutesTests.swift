import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Synchronization
import Testing

@Suite("HTTP routes of sharing's and user lookup's requests")
struct HTTPSharingRoutesTests {
    /// Each operation, a body of it, and the request the body is.
    static let requests: [(operation: String, body: String, request: CloudRequest)] = [
        (
            "records/resolve", #"{"shortGUIDs":[{"value":"g1","shouldFetchRootRecord":true}]}"#,
            .resolveShares([ShareLookup(shortGUID: "g1", fetchRootRecord: true)])
        ),
        ("records/accept", #"{"shortGUIDs":[{"value":"g2"}]}"#, .acceptShares([ShareLookup(shortGUID: "g2")])),
        (
            "users/lookup/email", #"{"users":[{"emailAddress":"bob@example.com"}]}"#,
            .lookupUsersByEmail(["bob@example.com"])
        ),
        ("users/lookup/id", #"{"users":[{"userRecordName":"_bob"}]}"#, .lookupUsersByID(["_bob"])),
        (
            "users/discover", #"{"lookupInfos":[{"emailAddress":"bob@example.com"},{"userRecordName":"_bob"}]}"#,
            .discoverUsers([.email("bob@example.com"), .user("_bob")])
        ),
    ]

    /// The requests that reached the service, with their callers.
    final class Seen: Sendable {
        private let storage = Mutex<[(request: CloudRequest, caller: Caller)]>([])

        var all: [(request: CloudRequest, caller: Caller)] { storage.withLock { $0 } }

        func append(_ request: CloudRequest, _ caller: Caller) { storage.withLock { $0.append((request, caller)) } }

        func removeAll() { storage.withLock { $0.removeAll() } }
    }

    /// Runs `body` against a server whose service records what reaches it.
    private func withRecordingServer(_ body: @Sendable (HTTPTestServer, Seen) async throws -> Void) async throws {
        let seen = Seen()
        let wrap: @Sendable (CloudService) -> any CloudServing = { WrappedService(base: $0, performed: seen.append) }
        try await HTTPTestServer.with(wrap: wrap) { server in try await body(server, seen) }
    }

    @Test("each path reaches the service on the public database as its request, for the signed-in user")
    func reachService() async throws {
        try await withRecordingServer { server, seen in
            for (operation, body, request) in Self.requests {
                seen.removeAll()
                let answer = try await server.sendAsUser(operation, body: body, scope: "public")
                // Until the rules of sharing exist the service refuses them; routing is what is tested here.
                #expect(answer.status != 404, "\(operation): \(answer.status) \(answer.json)")
                let reached = seen.all
                #expect(reached.count == 1, "\(operation)")
                #expect(reached.first?.request == request)
                #expect(reached.first?.caller.scope == .public)
                #expect(reached.first?.caller.user == server.userRecordName)
                #expect(reached.first?.caller.isAnonymous == false)
            }
        }
    }

    @Test("the private and shared database paths of these operations are 404, the service not reached")
    func otherDatabases() async throws {
        try await withRecordingServer { server, seen in
            for (operation, body, _) in Self.requests {
                for scope in ["private", "shared"] {
                    let answer = try await server.sendAsUser(operation, body: body, scope: scope)
                    #expect(answer.isError(.notFound, status: 404), "\(scope)/\(operation): \(answer.status)")
                    #expect(answer.reason?.contains("public database") == true)
                }
            }
            #expect(seen.all.isEmpty)
        }
    }

    @Test("a caller with the API token alone is refused 421 AUTHENTICATION_REQUIRED")
    func anonymous() async throws {
        try await HTTPTestServer.with { server in
            for (operation, body, _) in Self.requests {
                let answer = try await server.send(
                    "POST", server.path(operation, scope: "public"), query: ["ckAPIToken": server.apiToken],
                    body: Array(body.utf8))
                #expect(answer.isError(.authenticationRequired, status: 421), "\(operation): \(answer.status)")
            }
        }
    }

    @Test("a body that is not the operation's request is 400 BAD_REQUEST naming the operation")
    func malformedBodies() async throws {
        try await withRecordingServer { server, seen in
            let bodies = [
                ("records/resolve", #"{"shortGUIDs":[{"value":1}]}"#),
                ("records/accept", "{}"),
                ("users/lookup/email", #"{"users":[{"userRecordName":"_bob"}]}"#),
                ("users/lookup/id", #"{"users":"_bob"}"#),
                ("users/discover", #"{"lookupInfos":[{}]}"#),
            ]
            for (operation, body) in bodies {
                let answer = try await server.sendAsUser(operation, body: body, scope: "public")
                #expect(answer.isError(.badRequest, status: 400), "\(operation): \(answer.status)")
                #expect(answer.reason?.contains(operation) == true, "\(answer.reason ?? "")")
            }
            #expect(seen.all.isEmpty)
        }
    }

    @Test("paths of three parts other than the user lookups, and of four, are 404")
    func otherLengths() async throws {
        try await HTTPTestServer.with { server in
            for operation in ["users/lookup", "users/lookup/phone", "users/lookup/email/more", "records/modify/x"] {
                let answer = try await server.sendAsUser(operation, body: "{}", scope: "public")
                #expect(answer.isError(.notFound, status: 404), "\(operation): \(answer.status)")
            }
            let getOfPost = try await server.send(
                "GET", server.path("users/lookup/id", scope: "public"), query: server.userQuery)
            #expect(getOfPost.isError(.notFound, status: 404))
        }
    }
}
