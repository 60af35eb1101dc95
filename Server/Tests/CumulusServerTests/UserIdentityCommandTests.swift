import ArgumentParser
import Cumulus
import CumulusServer
import Foundation
import Testing

@testable import cumulus

/// `cumulus user add --display-name`, `user list` with the identities users
/// sign in with, and `user block`, `user unblock` and `user blocked`.
@Suite("cumulus user names and blocking")
struct UserIdentityCommandTests {
    static let container = "iCloud.com.example.people"
    static let issuer = "https://accounts.example.com"

    /// Runs `body` with a data directory holding the container, the
    /// operator's user carol, and an identity user signed in as `subject-1`
    /// with the name of its token.
    static func withData(_ body: (String, String) async throws -> Void) async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await CumulusCommandTests.createDatabase(data)
        _ = try await CumulusCommandTests.run(["container", "add", container, "--data", data])
        _ = try await CumulusCommandTests.run([
            "user", "add", "carol", "--container", container, "--display-name", " Carol Operator ", "--data", data,
        ])
        let service = try await makeTestService(directory: URL(fileURLWithPath: data))
        let identityUser: String
        do {
            identityUser = try await service.signIn(
                VerifiedIdentity(
                    issuer: issuer, subject: "subject-1",
                    nameComponents: UserNameComponents(givenName: "Ida", familyName: "Entity")),
                container: container)
        } catch {
            try? await service.close()
            throw error
        }
        try await service.close()
        try await body(data, identityUser)
    }

    @Test("user list shows each user's display name, and the issuer and subject of identity users")
    func list() async throws {
        try await Self.withData { data, identityUser in
            let lines = try await CumulusCommandTests.run([
                "user", "list", "--container", Self.container, "--data", data,
            ])
            #expect(lines.count == 3, "\(lines)")
            let header = try #require(lines.first)
            for column in ["NAME", "RECORD NAME", "DISPLAY NAME", "EMAIL", "TOKENS", "ISSUER", "SUBJECT"] {
                #expect(header.contains(column), "\(header)")
            }
            let carol = try #require(lines.first { $0.hasPrefix("carol ") })
            #expect(carol.contains("Carol Operator") && !carol.contains(Self.issuer), "\(carol)")
            let identity = try #require(lines.first { $0.hasPrefix(identityUser) })
            #expect(identity.contains("Ida Entity"), "\(identity)")
            #expect(identity.contains(Self.issuer) && identity.contains("subject-1"), "\(identity)")
            // The count of working tokens stays last: an identity user has none.
            #expect(identity.hasSuffix(" 0") && carol.hasSuffix(" 1"), "\(lines)")
        }
    }

    @Test("user add --display-name (or --name) refuses a control character and creates no user")
    func displayNameRefused() async throws {
        try await Self.withData { data, _ in
            await #expect(throws: ValidationError.self) {
                _ = try await CumulusCommandTests.run([
                    "user", "add", "dave", "--container", Self.container, "--name", "Dave\u{1B}[31m", "--data", data,
                ])
            }
            _ = try await CumulusCommandTests.run([
                "user", "add", "dave", "--container", Self.container, "--name", "Dave", "--data", data,
            ])
            let lines = try await CumulusCommandTests.run([
                "user", "list", "--container", Self.container, "--data", data,
            ])
            #expect(lines.contains { $0.hasPrefix("dave ") && $0.contains("Dave") && !$0.contains("\u{1B}") })
        }
    }

    @Test("user block keeps a subject out and says whose it is; unblock lets it in; blocked lists them")
    func blockAndUnblock() async throws {
        try await Self.withData { data, identityUser in
            let store = ["--container", Self.container, "--data", data]
            let blocked = try await CumulusCommandTests.run(
                ["user", "block", "--issuer", Self.issuer, "--subject", "subject-1"] + store)
            #expect(
                blocked.last?.contains("blocked") == true && blocked.last?.contains(identityUser) == true, "\(blocked)")
            let again = try await CumulusCommandTests.run(
                ["user", "block", "--issuer", Self.issuer, "--subject", "subject-1"] + store)
            #expect(again.last?.contains("already blocked") == true, "\(again)")
            let early = try await CumulusCommandTests.run(
                ["user", "block", "--issuer", Self.issuer, "--subject", "not-yet"] + store)
            #expect(early.last?.contains("has not signed in yet") == true, "\(early)")

            let list = try await CumulusCommandTests.run(["user", "blocked"] + store)
            #expect(list.count == 3 && list.first?.hasPrefix("ISSUER") == true, "\(list)")
            #expect(
                list.dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true)[1] } == [
                    "not-yet", "subject-1",
                ])
            let users = try await CumulusCommandTests.run(["user", "list"] + store)
            #expect(users.contains { $0.hasPrefix(identityUser) && $0.contains("subject-1 (blocked)") }, "\(users)")

            let service = try await makeTestService(directory: URL(fileURLWithPath: data))
            await #expect(throws: CloudError.self) {
                _ = try await service.signIn(
                    VerifiedIdentity(issuer: Self.issuer, subject: "subject-1"), container: Self.container)
            }
            // A blocked subject's first sign-in makes no user.
            await #expect(throws: CloudError.self) {
                _ = try await service.signIn(
                    VerifiedIdentity(issuer: Self.issuer, subject: "not-yet"), container: Self.container)
            }
            #expect(try await service.users(container: Self.container).count == 2)
            try await service.close()

            let unblocked = try await CumulusCommandTests.run(
                ["user", "unblock", "--issuer", Self.issuer, "--subject", "subject-1"] + store)
            #expect(unblocked.last?.contains("may sign in") == true, "\(unblocked)")
            await #expect(throws: ValidationError.self) {
                _ = try await CumulusCommandTests.run(
                    ["user", "unblock", "--issuer", Self.issuer, "--subject", "subject-1"] + store)
            }
            let reopened = try await makeTestService(directory: URL(fileURLWithPath: data))
            let back = try await reopened.signIn(
                VerifiedIdentity(issuer: Self.issuer, subject: "subject-1"), container: Self.container)
            try await reopened.close()
            #expect(back == identityUser)
        }
    }
}
