import Cumulus
import CumulusCrypto
import CumulusTesting
import Foundation
import Testing

/// A visit whose diagnosis the server must never read.
struct Visit: CloudCodable, Identifiable {
    var id: String
    var place: String
    var diagnosis: String
    var visits: Int = 1
    var cloudMetadata: RecordMetadata?
    static var cloudEncryptedFields: Set<String> { ["diagnosis", "visits"] }
}

/// A journal entry whose text is encrypted and merged line by line.
struct Entry: CloudCodable, Identifiable {
    var id: String
    var text: String
    var cloudMetadata: RecordMetadata?
    static var cloudEncryptedFields: Set<String> { ["text"] }
    static var cloudTextMergedFields: Set<String> { ["text"] }
}

/// A model with an asset in an encrypted field, which cannot be.
struct Scan: CloudCodable, Identifiable {
    var id: String
    var image: CloudAsset
    var cloudMetadata: RecordMetadata?
    static var cloudEncryptedFields: Set<String> { ["image"] }
}

func directory(_ name: String = #function) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-crypto-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func configuration(_ keys: some FieldKeyProvider) -> SyncConfiguration {
    var configuration = SyncConfiguration(automaticSync: false)
    configuration.fieldEncryption = FieldEncryption(cipher: AESGCMFieldCipher(), keys: keys)
    return configuration
}

/// The record as the server holds it, read by a device that decrypts nothing.
func serverRecord(_ server: InMemoryCloudServer, _ name: String, user: String = "alice") async throws -> Record {
    let zone = ZoneID(zoneName: Visit.cloudRecordType)
    let results = try await server.database(signedInAs: user).lookupRecords([name], zoneID: zone, desiredKeys: nil)
    return try #require(results.first?.record)
}

func holds(_ record: Record, _ marker: String) throws -> Bool {
    String(decoding: try WireFormat.encode(record), as: UTF8.self).contains(marker)
}

@Suite("Encrypted fields")
struct EncryptedFieldsTests {
    let key1 = AESGCMFieldCipher.makeKey(identifier: "k1")
    let key2 = AESGCMFieldCipher.makeKey(identifier: "k2")
    let marker = "PLAINTEXT-MARKER-5f1c"

    @Test("the server holds ciphertext only; another device with the key reads the value")
    func serverHoldsCiphertext() async throws {
        let server = InMemoryCloudServer()
        let keys = StaticFieldKeys(current: key1)
        let phone = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        try await phone.upload(Visit(id: "v1", place: "Clinic", diagnosis: "\(marker) sprain", visits: 3))
        try await phone.sync()

        let stored = try await serverRecord(server, "v1")
        #expect(try !holds(stored, marker))
        #expect(stored["place"] == .string("Clinic"))
        guard case .bytes(let sealed) = stored["diagnosis"], case .bytes = stored["visits"] else {
            Issue.record("the encrypted fields are not sealed: \(stored.fields)")
            return
        }
        #expect(sealed.starts(with: Array("CUE1".utf8)))

        let laptop = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        try await laptop.sync()
        let read = try #require(await laptop.model(withIdentifier: "v1"))
        #expect(read.diagnosis == "\(marker) sprain" && read.visits == 3 && read.place == "Clinic")
        await phone.close()
        await laptop.close()
    }

    @Test(
        "a device without the key keeps the record sealed, reports it, loses nothing, and reads it once the key comes")
    func missingKey() async throws {
        let server = InMemoryCloudServer()
        let phone = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(),
            configuration: configuration(StaticFieldKeys(current: key1)))
        try await phone.upload(Visit(id: "v1", place: "Clinic", diagnosis: marker))
        try await phone.sync()
        let before = try await serverRecord(server, "v1")

        let laptopDirectory = directory()
        let laptop = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: laptopDirectory,
            configuration: configuration(StaticFieldKeys(current: key2)))
        var events = laptop.events.makeAsyncIterator()
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "v1") == nil)
        #expect(await laptop.undecodableRecords == ["v1"])
        var reason = ""
        while let event = await events.next() {
            if case .undecodableRecord(let name, let why) = event, name == "v1" {
                reason = why
                break
            }
        }
        #expect(reason.contains("keyUnavailable") && reason.contains("'k1'"))
        // Its own edits go on, and the sealed record is neither dropped nor rewritten.
        try await laptop.upload(Visit(id: "v2", place: "Home", diagnosis: "fine"))
        try await laptop.sync()
        let after = try await serverRecord(server, "v1")
        #expect(after == before)
        await laptop.close()

        // With the key, the record kept in the journal reads without a fetch.
        let reopened = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: laptopDirectory,
            configuration: configuration(StaticFieldKeys(current: key2, previous: [key1])))
        #expect(await reopened.model(withIdentifier: "v1")?.diagnosis == marker)
        await reopened.close()
        await phone.close()
    }

    @Test("a wrong key under the value's identifier is a cannotOpen report, and nothing is lost")
    func wrongKey() async throws {
        let server = InMemoryCloudServer()
        let phone = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(),
            configuration: configuration(StaticFieldKeys(current: key1)))
        try await phone.upload(Visit(id: "v1", place: "Clinic", diagnosis: marker))
        try await phone.sync()
        let impostor = FieldKey(identifier: "k1", bytes: key2.bytes)
        let laptop = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(),
            configuration: configuration(StaticFieldKeys(current: impostor)))
        var events = laptop.events.makeAsyncIterator()
        try await laptop.sync()
        #expect(await laptop.undecodableRecords == ["v1"])
        while let event = await events.next() {
            if case .undecodableRecord(_, let why) = event {
                #expect(why.contains("cannotOpen"))
                break
            }
        }
        #expect(try await serverRecord(server, "v1")["place"] == .string("Clinic"))
        await laptop.close()
        await phone.close()
    }

    @Test("rotation: new writes use the new key, values sealed with the old one still read")
    func rotation() async throws {
        let server = InMemoryCloudServer()
        let phoneDirectory = directory()
        let phone = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: phoneDirectory,
            configuration: configuration(StaticFieldKeys(current: key1)))
        try await phone.upload(Visit(id: "old", place: "A", diagnosis: "first"))
        try await phone.sync()
        await phone.close()

        let rotated = StaticFieldKeys(current: key2, previous: [key1])
        let phoneAgain = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: phoneDirectory,
            configuration: configuration(rotated))
        try await phoneAgain.upload(Visit(id: "new", place: "B", diagnosis: "second"))
        try await phoneAgain.sync()
        func keyName(_ record: Record) -> String? {
            guard case .bytes(let data) = record["diagnosis"] else { return nil }
            let bytes = Array(data)
            return String(decoding: bytes[5..<(5 + Int(bytes[4]))], as: UTF8.self)
        }
        #expect(keyName(try await serverRecord(server, "old")) == "k1")
        #expect(keyName(try await serverRecord(server, "new")) == "k2")

        let laptop = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(),
            configuration: configuration(rotated))
        try await laptop.sync()
        #expect(await laptop.model(withIdentifier: "old")?.diagnosis == "first")
        #expect(await laptop.model(withIdentifier: "new")?.diagnosis == "second")
        // An edit of the old record seals it with the new key.
        var old = try #require(await laptop.model(withIdentifier: "old"))
        old.diagnosis = "first, revised"
        try await laptop.upload(old)
        try await laptop.sync()
        #expect(keyName(try await serverRecord(server, "old")) == "k2")
        await laptop.close()
        await phoneAgain.close()
    }

    @Test("concurrent edits of encrypted fields merge on the device, after decryption")
    func conflictsMerge() async throws {
        let server = InMemoryCloudServer()
        let keys = StaticFieldKeys(current: key1)
        let phone = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        let laptop = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        try await phone.upload(Visit(id: "v1", place: "Clinic", diagnosis: "sprain", visits: 1))
        try await phone.sync()
        try await laptop.sync()
        var onPhone = try #require(await phone.model(withIdentifier: "v1"))
        var onLaptop = try #require(await laptop.model(withIdentifier: "v1"))
        onPhone.diagnosis = "fracture"
        onLaptop.visits = 2
        try await phone.upload(onPhone)
        try await laptop.upload(onLaptop)
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()
        for engine in [phone, laptop] {
            let merged = try #require(await engine.model(withIdentifier: "v1"))
            #expect(merged.diagnosis == "fracture" && merged.visits == 2)
        }
        #expect(try !holds(try await serverRecord(server, "v1"), "fracture"))
        await phone.close()
        await laptop.close()
    }

    @Test("an encrypted text edited on two devices merges line by line, in clear on the devices only")
    func encryptedTextMerges() async throws {
        let server = InMemoryCloudServer()
        let keys = StaticFieldKeys(current: key1)
        let phone = try await SyncEngine<Entry>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        let laptop = try await SyncEngine<Entry>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        try await phone.upload(Entry(id: "e", text: "Slept badly\nWalked to the sea\n"))
        try await phone.sync()
        try await laptop.sync()
        var onPhone = try #require(await phone.model(withIdentifier: "e"))
        var onLaptop = try #require(await laptop.model(withIdentifier: "e"))
        onPhone.text = "Slept badly, \(marker)\nWalked to the sea\n"
        onLaptop.text = "Slept badly\nWalked to the sea with Ada\n"
        try await phone.upload(onPhone)
        try await laptop.upload(onLaptop)
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()
        let merged = "Slept badly, \(marker)\nWalked to the sea with Ada\n"
        #expect(await phone.model(withIdentifier: "e")?.text == merged)
        #expect(await laptop.model(withIdentifier: "e")?.text == merged)
        let zone = ZoneID(zoneName: Entry.cloudRecordType)
        let stored = try #require(
            try await server.database(signedInAs: "alice").lookupRecords(["e"], zoneID: zone, desiredKeys: nil)
                .first?.record)
        #expect(try !holds(stored, marker))
        await phone.close()
        await laptop.close()
    }

    @Test("a query or a query subscription naming an encrypted field is refused before it is sent")
    func queriesRefused() async throws {
        let server = InMemoryCloudServer()
        let keys = StaticFieldKeys(current: key1)
        let phone = try await SyncEngine<Visit>(
            database: server.database(signedInAs: "alice"), directory: directory(), configuration: configuration(keys))
        try await phone.upload(Visit(id: "v1", place: "Clinic", diagnosis: marker))
        try await phone.sync()
        let database = EncryptedFieldsDatabase(
            server.database(signedInAs: "alice"), model: Visit.self,
            encryption: FieldEncryption(cipher: AESGCMFieldCipher(), keys: keys))
        let zone = ZoneID(zoneName: Visit.cloudRecordType)
        let byDiagnosis = RecordQuery(
            recordType: "Visit",
            filters: [QueryFilter("diagnosis", .equals, .string(marker))])
        await #expect {
            _ = try await database.queryRecords(
                byDiagnosis, zoneID: zone, resultsLimit: nil, continuationMarker: nil, desiredKeys: nil)
        } throws: { error in
            (error as? FieldEncryptionError)?.code == .encryptedFieldInQuery
                && (error as? FieldEncryptionError)?.field == "diagnosis"
        }
        let sorted = RecordQuery(recordType: "Visit", sort: [QuerySort("visits")])
        await #expect(throws: FieldEncryptionError.self) {
            _ = try await database.queryRecords(
                sorted, zoneID: zone, resultsLimit: nil, continuationMarker: nil, desiredKeys: nil)
        }
        await #expect(throws: FieldEncryptionError.self) {
            _ = try await database.modifySubscriptions([
                .save(Subscription(subscriptionID: "s", query: byDiagnosis, firesOn: [.created]))
            ])
        }
        // A query by a field in clear works, and answers the values opened.
        let byPlace = RecordQuery(
            recordType: "Visit",
            filters: [QueryFilter("place", .equals, .string("Clinic"))])
        let found = try await database.queryRecords(
            byPlace, zoneID: zone, resultsLimit: nil, continuationMarker: nil, desiredKeys: nil)
        #expect(found.records.map { $0["diagnosis"] } == [FieldValue.string(marker)])
        await phone.close()
    }

    @Test("an engine of a model with encrypted fields needs encryption; an asset cannot be encrypted")
    func refusals() async throws {
        let server = InMemoryCloudServer()
        await #expect {
            _ = try await SyncEngine<Visit>(
                database: server.database(signedInAs: "alice"), directory: directory(),
                configuration: SyncConfiguration(automaticSync: false))
        } throws: { error in
            (error as? FieldEncryptionError)?.code == .notConfigured
        }
        let scans = try await SyncEngine<Scan>(
            database: server.database(signedInAs: "alice"), directory: directory(),
            configuration: configuration(StaticFieldKeys(current: key1)))
        let file = directory().appendingPathComponent("scan.bin")
        try Data([1, 2, 3]).write(to: file)
        await #expect {
            try await scans.upload(Scan(id: "s1", image: try await scans.asset(contentsOf: file)))
        } throws: { error in
            (error as? FieldEncryptionError)?.code == .cannotSeal
        }
        #expect(await scans.pendingChangeCount == 0)
        await scans.close()
    }

    @Test("the cipher authenticates: a changed byte or other associated data does not open")
    func cipherAuthenticates() throws {
        let cipher = AESGCMFieldCipher()
        let sealed = try cipher.seal(Array("hello".utf8), key: key1.bytes, authenticating: [1])
        #expect(try cipher.open(sealed, key: key1.bytes, authenticating: [1]) == Array("hello".utf8))
        #expect(throws: (any Error).self) { try cipher.open(sealed, key: key1.bytes, authenticating: [2]) }
        var changed = sealed
        changed[changed.count - 1] ^= 1
        #expect(throws: (any Error).self) { try cipher.open(changed, key: key1.bytes, authenticating: [1]) }
        #expect(throws: (any Error).self) { try cipher.open(sealed, key: key2.bytes, authenticating: [1]) }
        #expect(try cipher.seal(Array("hello".utf8), key: key1.bytes, authenticating: [1]) != sealed)
    }
}
