import Crypto
import Cumulus
import CumulusSigning
import Foundation
import Testing

/// A server-to-server key end to end: `RemoteCloudDatabase` signing with
/// `P256RequestSigner`, the server checking the signature.
@Suite("Server-to-server keys over HTTP")
struct ServerKeyTests {
    @Test("a signed client writes the public database; users cannot change what it published")
    func signedClient() async throws {
        let server = try await RunningServer.start()
        do {
            let key = P256.Signing.PrivateKey()
            let keyID = try await server.service.addServerKey(
                container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
            let signer = try P256RequestSigner(keyID: keyID, privateKeyPEM: key.pemRepresentation)
            func keyed(_ scope: DatabaseScope, signer: any CloudRequestSigner) -> RemoteCloudDatabase {
                RemoteCloudDatabase(
                    configuration: RemoteCloudDatabase.Configuration(
                        baseURL: server.baseURL, container: server.container, scope: scope),
                    credentials: .serverKey(apiToken: nil, signer: signer))
            }
            let backend = keyed(.public, signer: signer)

            // Alice's public record, then the key edits it: a key may change any public record.
            let alice = try await server.database(signedInAs: "alice", scope: .public)
            let zone = ZoneID.defaultZone
            let created = try #require(
                try await alice.modifyRecords(
                    [RecordOperation(.create, Record(recordType: "Notice", recordName: "n", zoneID: zone))],
                    zoneID: zone, atomic: false)[0].record)
            var edit = created
            edit["text"] = .string("moderated")
            let edited = try await backend.modifyRecords([RecordOperation(.update, edit)], zoneID: zone, atomic: false)
            #expect(edited[0].record?["text"] == .string("moderated"))
            let read = try await backend.lookupRecords(["n"], zoneID: zone, desiredKeys: nil)
            #expect(read[0].record == edited[0].record)

            // What a key publishes, users may read but neither change nor delete; keys may.
            let published = try #require(
                try await backend.modifyRecords(
                    [RecordOperation(.create, Record(recordType: "Notice", recordName: "official", zoneID: zone))],
                    zoneID: zone, atomic: false)[0].record)
            var defaced = published
            defaced["text"] = .string("PWNED")
            let bob = try await server.database(signedInAs: "bob", scope: .public)
            for operation in [
                RecordOperation(.update, defaced), RecordOperation(.forceUpdate, defaced),
                RecordOperation(.forceReplace, defaced), RecordOperation(.forceDelete, defaced),
            ] {
                let results = try await bob.modifyRecords([operation], zoneID: zone, atomic: false)
                #expect(results[0].error?.code == .accessDenied, "\(operation.type)")
            }
            #expect(try await bob.lookupRecords(["official"], zoneID: zone, desiredKeys: nil)[0].record == published)
            let moderated = try await backend.modifyRecords(
                [RecordOperation(.forceUpdate, defaced)], zoneID: zone, atomic: false)
            #expect(moderated[0].record?["text"] == .string("PWNED"))

            // The key reaches no private database, and a wrong key or an unknown ID reaches nothing.
            await #expect(throws: CloudError.self) { try await keyed(.private, signer: signer).listZones() }
            let stranger = try P256RequestSigner(
                keyID: keyID, privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation)
            do {
                _ = try await keyed(.public, signer: stranger).lookupRecords(["n"], zoneID: zone, desiredKeys: nil)
                Issue.record("a signature by another key was accepted")
            } catch let error as CloudError {
                #expect(error.code == .authenticationFailed)
            }
            let unknown = try P256RequestSigner(
                keyID: String(repeating: "0", count: 64), privateKeyPEM: key.pemRepresentation)
            do {
                _ = try await keyed(.public, signer: unknown).lookupRecords(["n"], zoneID: zone, desiredKeys: nil)
                Issue.record("an unknown key ID was accepted")
            } catch let error as CloudError {
                #expect(error.code == .authenticationFailed)
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
