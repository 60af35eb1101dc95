import Cumulus
import CumulusServer
import Foundation
import Testing

/// What sign-in keeps in storage, through the `StorageTransaction` API and
/// the service: issuers and identities, names as exact bytes.
@Suite("Identity storage")
struct IdentityStorageTests {
    static let keySet = TestSigningKey.keySet([TestSigningKey.es256(keyID: "k")])

    @Test(
        "issuers are saved, replaced, listed by container and deleted; names are exact bytes",
        arguments: TestStore.single)
    func issuers(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let (composed, decomposed) = (StorageNameTests.canonicalPair[0], StorageNameTests.canonicalPair[1])
            let one = StoredIdentityIssuer(
                issuer: composed, audiences: ["a", "b"], keySetURL: nil, keySet: Self.keySet)
            let two = StoredIdentityIssuer(
                issuer: decomposed, audiences: [decomposed], keySetURL: "https://keys.example.com/jwks", keySet: nil)
            try await storage.write { transaction in
                try await transaction.saveIdentityIssuer(one, container: "c")
                try await transaction.saveIdentityIssuer(two, container: "c")
                try await transaction.saveIdentityIssuer(one, container: "d")
            }
            let listed = try await storage.read { try await $0.identityIssuers(container: "c") }
            #expect(listed.count == 2)
            #expect(listed.contains { $0.issuer.isExactly(composed) && $0 == one })
            #expect(listed.contains { $0.issuer.isExactly(decomposed) && $0.audiences[0].isExactly(decomposed) })
            let replaced = StoredIdentityIssuer(
                issuer: composed, audiences: ["z"], keySetURL: nil, keySet: Self.keySet)
            try await storage.write { try await $0.saveIdentityIssuer(replaced, container: "c") }
            let after = try await storage.read { try await $0.identityIssuers(container: "c") }
            #expect(after.count == 2 && after.contains(replaced))
            let deleted = try await storage.write { transaction in
                (
                    try await transaction.deleteIdentityIssuer(composed, container: "c"),
                    try await transaction.deleteIdentityIssuer(composed, container: "c")
                )
            }
            #expect(deleted == (true, false))
            let left = try await storage.read { try await $0.identityIssuers(container: "c") }
            #expect(left.map(\.issuer) == [decomposed])
            #expect(try await storage.read { try await $0.identityIssuers(container: "d") } == [one])
        }
    }

    @Test(
        "an identity maps once; subjects and issuers are exact bytes; a user's identities are deleted together",
        arguments: TestStore.single)
    func identities(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let (composed, decomposed) = (StorageNameTests.canonicalPair[0], StorageNameTests.canonicalPair[1])
            let made = try await storage.write { transaction in
                [
                    try await transaction.createIdentity(
                        issuer: "i", subject: composed, userRecordName: "_one", container: "c"),
                    try await transaction.createIdentity(
                        issuer: "i", subject: composed, userRecordName: "_two", container: "c"),
                    try await transaction.createIdentity(
                        issuer: "i", subject: decomposed, userRecordName: "_three", container: "c"),
                    try await transaction.createIdentity(
                        issuer: decomposed, subject: composed, userRecordName: "_one", container: "c"),
                    try await transaction.createIdentity(
                        issuer: "i", subject: composed, userRecordName: "_four", container: "d"),
                ]
            }
            #expect(made == [true, false, true, true, true])
            let users = try await storage.read { transaction in
                [
                    try await transaction.identityUser(issuer: "i", subject: composed, container: "c"),
                    try await transaction.identityUser(issuer: "i", subject: decomposed, container: "c"),
                    try await transaction.identityUser(issuer: decomposed, subject: composed, container: "c"),
                    try await transaction.identityUser(issuer: composed, subject: composed, container: "c"),
                    try await transaction.identityUser(issuer: "i", subject: composed, container: "d"),
                ]
            }
            #expect(users == ["_one", "_three", "_one", nil, "_four"])
            let counts = try await storage.write { transaction in
                [
                    try await transaction.deleteIdentities(ofUser: "_one", container: "c"),
                    try await transaction.deleteIdentities(ofUser: "_one", container: "c"),
                ]
            }
            #expect(counts == [2, 0])
            let after = try await storage.read { transaction in
                [
                    try await transaction.identityUser(issuer: "i", subject: composed, container: "c"),
                    try await transaction.identityUser(issuer: "i", subject: decomposed, container: "c"),
                ]
            }
            #expect(after == [nil, "_three"])
        }
    }

    @Test(
        "concurrent first sign-ins on two servers on one PostgreSQL make one user",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func firstSightOnTwoServers() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-id-\(UUID().uuidString)")
        let services = try await TestStore.twoPostgresServers.makeServices(directory: directory)
        do {
            _ = try await services.services[0].addContainer(named: "c")
            let identity = VerifiedIdentity(
                issuer: "https://i.example.com", subject: "s", verifiedEmailAddress: "S@x.org")
            let names = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<8 {
                    let service = services.services[index % 2]
                    group.addTask { try await service.signIn(identity, container: "c") }
                }
                var names: [String] = []
                for try await name in group { names.append(name) }
                return names
            }
            #expect(Set(names).count == 1, "\(names)")
            let users = try await services.services[1].storage.read {
                try await $0.users(withEmailAddresses: ["s@x.org"], container: "c")
            }
            #expect(users.map(\.recordName) == [names[0]])
        } catch {
            await services.close()
            throw error
        }
        await services.close()
    }

    @Test(
        "a removed user's identities go with deleteIdentities; the subject's next sign-in is a new user",
        arguments: TestStore.single)
    func deleteIdentities(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-id-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let services = try await store.makeServices(directory: directory)
        do {
            let service = services.services[0]
            _ = try await service.addContainer(named: "c")
            let identity = VerifiedIdentity(issuer: "i", subject: "s")
            let first = try await service.signIn(identity, container: "c")
            #expect(try await service.signIn(identity, container: "c") == first)
            #expect(try await service.deleteIdentities(ofUser: first, container: "c") == 1)
            let second = try await service.signIn(identity, container: "c")
            #expect(second != first)
            await #expect(throws: CloudError.self) {
                try await service.signIn(VerifiedIdentity(issuer: "i", subject: "s"), container: "unknown")
            }
            await #expect(throws: CloudError.self) {
                try await service.signIn(VerifiedIdentity(issuer: "i", subject: ""), container: "c")
            }
        } catch {
            await services.close()
            throw error
        }
        await services.close()
    }

    @Test("addIdentityIssuer refuses what cannot sign anyone in, with a reason")
    func issuerValidation() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-id-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let services = try await TestStore.sqlite.makeServices(directory: directory)
        let service = services.services[0]
        _ = try await service.addContainer(named: "c")
        let privateKey = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"p","x":"AA","y":"AA","d":"AA"}]}"#
        let noKID = #"{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#
        let badNumbers = #"{"keys":[{"kty":"EC","crv":"P-256","kid":"b","x":"AA","y":"AA"}]}"#
        let cases: [(StoredIdentityIssuer, String, String)] = [
            (StoredIdentityIssuer(issuer: "", audiences: ["a"], keySetURL: nil, keySet: Self.keySet), "c", "name"),
            (StoredIdentityIssuer(issuer: "i", audiences: [], keySetURL: nil, keySet: Self.keySet), "c", "audience"),
            (StoredIdentityIssuer(issuer: "i", audiences: [""], keySetURL: nil, keySet: Self.keySet), "c", "audience"),
            (
                StoredIdentityIssuer(issuer: "i\u{0}", audiences: ["a"], keySetURL: nil, keySet: Self.keySet), "c",
                "U+0000"
            ),
            (StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: nil, keySet: nil), "c", "either"),
            (
                StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: "https://k", keySet: Self.keySet), "c",
                "either"
            ),
            (StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: nil, keySet: "[]"), "c", "JWKS"),
            (StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: nil, keySet: privateKey), "c", "private"),
            (StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: nil, keySet: noKID), "c", "no public key"),
            (StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: nil, keySet: badNumbers), "c", "valid"),
            (
                StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: "http://keys.example.com", keySet: nil),
                "c", "https"
            ),
            (StoredIdentityIssuer(issuer: "i", audiences: ["a"], keySetURL: "keys", keySet: nil), "c", "absolute"),
        ]
        for (issuer, container, reason) in cases {
            do {
                try await service.addIdentityIssuer(issuer, container: container)
                Issue.record("\(reason): accepted")
            } catch let error as CloudError {
                #expect(error.code == .badRequest && error.reason.contains(reason), "\(reason): \(error.reason)")
            }
        }
        let good = StoredIdentityIssuer(issuer: "i", audiences: ["a", "a"], keySetURL: nil, keySet: Self.keySet)
        await #expect(throws: CloudError.self) { try await service.addIdentityIssuer(good, container: "unknown") }
        #expect(try await service.addIdentityIssuer(good, container: "c") == 1)
        #expect(try await service.identityIssuers(container: "c").map(\.audiences) == [["a"]])
        let loopback = StoredIdentityIssuer(
            issuer: "j", audiences: ["a"], keySetURL: "http://127.0.0.1:9/jwks", keySet: nil)
        #expect(try await service.addIdentityIssuer(loopback, container: "c") == nil)
        await services.close()
    }
}
