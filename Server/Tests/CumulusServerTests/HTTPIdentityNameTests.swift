import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// The name an identity token gives its user, at each sign-in, as lookups
/// and the share page show it.
@Suite("HTTP identity token names")
struct HTTPIdentityNameTests {
    static let key = HTTPIdentityTokenTests.ec

    /// The name a `users/lookup/email` answer gives the user with `email`.
    static func nameFound(_ server: HTTPTestServer, email: String) async throws -> [String: String]? {
        let answer = try await server.sendAsUser(
            "users/lookup/email", body: #"{"users":[{"emailAddress":"\#(email)"}]}"#, scope: "public")
        #expect(answer.status == 200)
        let users = answer.json["users"] as? [[String: Any]] ?? []
        return users.first?["nameComponents"] as? [String: String]
    }

    @Test("a token's name becomes its user's at each sign-in, and lookups answer it", arguments: TestStore.single)
    func signInNames(_ store: TestStore) async throws {
        try await HTTPIdentityTokenTests.withIssuer(store: store) { server, service in
            let email = "ida@example.com"
            let first = try await Self.key.sign(
                TestClaims(
                    sub: "ida", email: email, emailVerified: .bool(true), name: "Ignored", givenName: "Ida",
                    familyName: "Entity"))
            let ida = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(first)))
            #expect(try await Self.nameFound(server, email: email) == ["givenName": "Ida", "familyName": "Entity"])

            // A name changed at the issuer shows from the next token on.
            let renamed = try await Self.key.sign(TestClaims(sub: "ida", name: "Ida  Renamed\n"))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(renamed)) == ida)
            #expect(try await Self.nameFound(server, email: email) == ["givenName": "Ida Renamed"])

            // A token without a name keeps the one the user has.
            let unnamed = try await Self.key.sign(TestClaims(sub: "ida", exp: Date().addingTimeInterval(900)))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(unnamed)) == ida)
            #expect(try await Self.nameFound(server, email: email) == ["givenName": "Ida Renamed"])

            // Reordering and control characters do not reach other users.
            let tricky = try await Self.key.sign(TestClaims(sub: "ida", givenName: "\u{202E}Ida\u{7}\tX"))
            #expect(HTTPTestServer.userRecordName(try await server.sendBearer(tricky)) == ida)
            #expect(try await Self.nameFound(server, email: email) == ["givenName": "Ida X"])

            let listed = try await service.users(container: server.container).first { $0.recordName == ida }
            #expect(listed?.nameComponents?.displayName == "Ida X")
            #expect(
                listed?.identities == [
                    StoredIdentity(issuer: TestIssuer.defaultIssuer, subject: "ida", userRecordName: ida)
                ])
        }
    }

    @Test("the share page says who shares, by the owner's name, escaped", arguments: TestStore.single)
    func sharePage(_ store: TestStore) async throws {
        try await HTTPIdentityTokenTests.withIssuer(store: store) { server, service in
            let token = try await Self.key.sign(
                TestClaims(sub: "owner", givenName: "Alice <b>", familyName: "Example & Co"))
            let owner = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(token)))
            try await HTTPSharePageTests.saveShare("named-share", title: "Trip", owner: owner, in: service)
            let page = String(decoding: try await server.send("GET", "/share/named-share").body, as: UTF8.self)
            #expect(page.contains("Shared by Alice &lt;b&gt; Example &amp; Co"), "\(page)")
            #expect(!page.contains(owner), "\(page)")
            // The page never shows a participant's name.
            #expect(!page.contains("Bobsecretname"))
        }
    }
}
