import CumulusServer
import Foundation
import Testing

@Suite("Console on two servers of one PostgreSQL database")
struct ConsoleMultiServerTests {
    @Test(
        "a token made through one server signs in on the other, and its revoke ends the session there",
        arguments: TestStore.available.filter { $0 == .twoPostgresServers })
    func tokensShared(store: TestStore) async throws {
        try await ConsoleTestServer.with(store: store) { server in
            let answer = try await server.send(.POST, "/console/sign-in", form: [("token", server.token)], on: 1)
            #expect(answer.status == 303)
            let cookie = try #require(answer.headers["Set-Cookie"].first)
            let session = String(cookie.split(separator: ";")[0].split(separator: "=", maxSplits: 1)[1])
            #expect(try await server.send(.GET, "/console", session: session, on: 1).status == 200)
            // Sessions are the server's own: the first server does not know this one.
            #expect(try await server.send(.GET, "/console", session: session, on: 0).status == 303)
            let id = try #require(try await server.service.consoleTokens().first?.id)
            #expect(try await server.service.revokeConsoleToken(id: id) != nil)
            #expect(try await server.send(.GET, "/console", session: session, on: 1).status == 303)
        }
    }
}
