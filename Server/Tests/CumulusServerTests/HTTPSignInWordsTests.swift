import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// What the refusals of sign-in say: what happened, and what to send, and
/// nothing a stranger could learn from.
@Suite("HTTP sign-in refusals' words")
struct HTTPSignInWordsTests {
    @Test("a revoked web auth token and one never issued answer one reason, which says revoked")
    func revokedAndUnknown() async throws {
        try await HTTPTestServer.with { server in
            let service = try #require(server.service as? CloudService)
            let device = try await service.addWebAuthToken(forUser: "alice", container: server.container, lifetime: nil)
            try await service.revokeWebAuthToken(device.webAuthToken, container: server.container)
            func answer(_ token: String) async throws -> HTTPAnswer {
                try await server.send(
                    "GET", server.path("zones/list"), query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": token])
            }
            let revoked = try await answer(device.webAuthToken)
            let unknown = try await answer(String(repeating: "ab", count: 32))
            #expect(revoked.isError(.authenticationFailed, status: 401))
            #expect(revoked.reason?.contains("revoked") == true, "\(revoked.reason ?? "")")
            #expect(revoked.reason == unknown.reason)
            #expect(!(revoked.reason ?? "").contains(device.webAuthToken))
        }
    }

    @Test("a signed-out request names the identity token when the container has an issuer")
    func signedOut() async throws {
        try await HTTPTestServer.with { server in
            let plain = try await server.send("GET", server.path("zones/list"), query: ["ckAPIToken": server.apiToken])
            #expect(plain.isError(.authenticationRequired, status: 421), "\(plain.status)")
            #expect(plain.reason == "The request needs a signed-in user (ckWebAuthToken).")
        }
        try await HTTPIdentityTokenTests.withIssuer { server, _ in
            let answer = try await server.send("GET", server.path("zones/list"), query: ["ckAPIToken": server.apiToken])
            #expect(answer.isError(.authenticationRequired, status: 421), "\(answer.status)")
            let reason = answer.reason ?? ""
            #expect(reason.contains("Authorization: Bearer") && reason.contains("ckWebAuthToken"), "\(reason)")
        }
    }
}
