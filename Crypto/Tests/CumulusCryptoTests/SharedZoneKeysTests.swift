import Cumulus
import CumulusCrypto
import CumulusTesting
import Foundation
import Testing

/// Issue #36: the keys of an encrypted shared zone travel wrapped for each
/// participant; the server never holds one it can use.
@Suite("Encrypted shared zones")
struct SharedZoneKeysTests {
    let server = InMemoryCloudServer()
    let zoneKey = AESGCMFieldCipher.makeKey(identifier: "clinic-1")
    let marker = "SHARED-PLAINTEXT-3a9e"

    func engine(_ user: String, keys: [FieldKey], sharedZone: ZoneID? = nil) async throws -> SyncEngine<Visit> {
        var configuration = configuration(StaticFieldKeys(current: keys[0], previous: Array(keys.dropFirst())))
        if let sharedZone {
            configuration = {
                var shared = SyncConfiguration(sharedZone: sharedZone)
                shared.automaticSync = false
                shared.fieldEncryption = configuration.fieldEncryption
                return shared
            }()
        }
        return try await SyncEngine<Visit>(
            database: server.database(scope: sharedZone == nil ? .private : .shared, signedInAs: user),
            directory: directory(), configuration: configuration)
    }

    /// Alice's encrypted zone shared with `participant`, its key granted to
    /// the participant's published public key; the participant's share accepted.
    func sharedClinic(with participant: String, agreement: FieldKeyAgreementKey) async throws
        -> (owner: SyncEngine<Visit>, zone: ZoneID)
    {
        let alice = try await engine("alice", keys: [zoneKey])
        try await alice.upload(Visit(id: "v1", place: "Clinic", diagnosis: "\(marker) sprain"))
        try await alice.sync()

        try await FieldKeySharing.publish(agreement, in: server.database(scope: .public, signedInAs: participant))
        let aliceInPublic = server.database(scope: .public, signedInAs: "alice")
        let published = try #require(try await FieldKeySharing.publishedKey(of: participant, in: aliceInPublic))
        #expect(published == agreement.publicKey)

        let share = try await alice.shareZone(
            title: "Clinic", participants: [ShareParticipant(lookupInfo: .user(participant), permission: .readWrite)])
        try await FieldKeySharing.grant(
            [zoneKey], in: ZoneID(zoneName: Visit.cloudRecordType), to: [(participant, published)],
            database: server.database(signedInAs: "alice"))

        let participantPublic = server.database(scope: .public, signedInAs: participant)
        let invitation = try await participantPublic.shareMetadata(shortGUID: try #require(share.shortGUID))
        let accepted = try await participantPublic.accept(invitation)
        return (alice, accepted.zoneID)
    }

    @Test("a participant unwraps the zone's key, reads and writes encrypted fields; the server holds no key")
    func participantReadsAndWrites() async throws {
        let bobKey = FieldKeyAgreementKey()
        let (alice, zone) = try await sharedClinic(with: "bob", agreement: bobKey)

        let received = try await FieldKeySharing.receive(
            in: zone, with: bobKey, database: server.database(scope: .shared, signedInAs: "bob"))
        #expect(received == [zoneKey])
        let bob = try await engine("bob", keys: received, sharedZone: zone)
        try await bob.sync()
        #expect(await bob.model(withIdentifier: "v1")?.diagnosis == "\(marker) sprain")
        try await bob.upload(Visit(id: "v2", place: "Pharmacy", diagnosis: "\(marker) by bob"))
        try await bob.sync()

        try await alice.sync()
        #expect(await alice.model(withIdentifier: "v2")?.diagnosis == "\(marker) by bob")

        // Neither the values nor the key itself are anywhere on the server.
        let stored = await server.storedRecords(in: ZoneID(zoneName: Visit.cloudRecordType), of: "alice")
        // Two visits, the share and the wrapped keys.
        #expect(stored.count == 4)
        let keyText = Data(zoneKey.bytes).base64EncodedString()
        for record in stored {
            let json = String(decoding: try WireFormat.encode(record), as: UTF8.self)
            #expect(!json.contains(marker), "\(record.recordName) holds plaintext")
            #expect(!json.contains(keyText), "\(record.recordName) holds the zone key")
        }
        await alice.close()
        await bob.close()
    }

    @Test("a key wrapped for one user opens for no other key, zone or recipient")
    func wrappedKeyIsBound() throws {
        let bob = FieldKeyAgreementKey()
        let carol = FieldKeyAgreementKey()
        let zone = ZoneID(zoneName: "Clinic")
        let wrapped = try FieldKeySharing.wrap(zoneKey, for: bob.publicKey, zone: zone, recipient: "bob")
        #expect(try FieldKeySharing.unwrap(wrapped, with: bob, zone: zone, recipient: "bob") == zoneKey)
        #expect(throws: FieldKeySharing.Error.self) {
            try FieldKeySharing.unwrap(wrapped, with: carol, zone: zone, recipient: "bob")
        }
        #expect(throws: FieldKeySharing.Error.self) {
            try FieldKeySharing.unwrap(wrapped, with: bob, zone: ZoneID(zoneName: "Other"), recipient: "bob")
        }
        #expect(throws: FieldKeySharing.Error.self) {
            try FieldKeySharing.unwrap(wrapped, with: bob, zone: zone, recipient: "carol")
        }
        var tampered = wrapped
        tampered[tampered.count - 1] ^= 1
        #expect(throws: FieldKeySharing.Error.self) {
            try FieldKeySharing.unwrap(tampered, with: bob, zone: zone, recipient: "bob")
        }
        // Two wraps of one key differ: each uses a fresh agreement key.
        #expect(try FieldKeySharing.wrap(zoneKey, for: bob.publicKey, zone: zone, recipient: "bob") != wrapped)
        #expect(try FieldKeyAgreementKey(rawRepresentation: bob.rawRepresentation).publicKey == bob.publicKey)
    }

    @Test("a user who was granted nothing receives nothing, and cannot replace another user's public key")
    func othersGetNothing() async throws {
        let bobKey = FieldKeyAgreementKey()
        _ = try await sharedClinic(with: "bob", agreement: bobKey)

        // Carol is no participant: the shared database does not even show her the zone's record of keys.
        let carolKey = FieldKeyAgreementKey()
        let carolShared = server.database(scope: .shared, signedInAs: "carol")
        let zone = ZoneID(zoneName: Visit.cloudRecordType, ownerRecordName: "alice")
        await #expect(throws: (any Error).self) {
            _ = try await FieldKeySharing.receive(in: zone, with: carolKey, database: carolShared)
        }

        // Carol cannot publish her key as bob's: the public record is bob's own.
        let carolPublic = server.database(scope: .public, signedInAs: "carol")
        let forged = Record(
            recordType: FieldKeySharing.publicKeyRecordType, recordName: "bob", zoneID: .defaultZone,
            fields: ["publicKey": .bytes(Data(carolKey.publicKey))])
        let results = try await carolPublic.modifyRecords(
            [RecordOperation(.forceReplace, forged)], zoneID: .defaultZone, atomic: false)
        guard case .failure = results.first else {
            Issue.record("another user replaced bob's public key: \(results)")
            return
        }
        let published = try await FieldKeySharing.publishedKey(of: "bob", in: carolPublic)
        #expect(published == bobKey.publicKey)
    }
}
