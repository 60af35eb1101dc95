import Cumulus
import CumulusServer
import Foundation
import Testing

/// Names written straight through the `StorageTransaction` API come back
/// byte for byte: every kind of name, in NFC and NFD forms (two rows), and
/// with U+0000 on SQLite; PostgreSQL, which cannot hold U+0000, refuses it
/// with a clear error and stores nothing.
@Suite("Storage keeps names exactly")
struct StorageNameTests {
    /// Two spellings Swift's `==` calls equal, and names that a C string would cut.
    static let canonicalPair = ["caf\u{E9}", "cafe\u{301}"]
    static let withNUL = ["a\u{0}b", "a\u{0}c", "a"]

    @Test("NFC and NFD forms of every kind of name are two rows, each read back exactly", arguments: TestStore.single)
    func canonicalForms(_ store: TestStore) async throws {
        try await Self.withStorage(store) { storage in
            try await Self.roundTrip(Self.canonicalPair, in: storage)
        }
    }

    @Test("names holding U+0000 come back whole from SQLite")
    func nulOnSQLite() async throws {
        try await Self.withStorage(.sqlite) { storage in
            try await Self.roundTrip(Self.withNUL, in: storage)
        }
    }

    @Test(
        "PostgreSQL refuses a name holding U+0000 with a clear error and stores nothing",
        .enabled(if: PostgresTestDatabase.isEnabled))
    func nulOnPostgres() async throws {
        try await Self.withStorage(.postgres) { storage in
            let key = DatabaseKey(container: "iCloud.test", environment: .development, scope: .private, owner: "alice")
            let (database, zone) = try await storage.write { transaction in
                let database = try await transaction.createDatabase(key, incarnation: 1)
                return (
                    database.id,
                    try await transaction.createZone(named: "Notes", inDatabase: database.id, incarnation: 1)
                )
            }
            let attempts: [@Sendable (any StorageTransaction) async throws -> Void] = [
                { try await $0.saveRecords([Self.row("a\u{0}b", zone: "Notes")], inZone: zone.id) },
                { _ = try await $0.createZone(named: "a\u{0}b", inDatabase: database, incarnation: 1) },
                { _ = try await $0.createContainer(named: "a\u{0}b", tokenHash: "h") },
                { _ = try await $0.records(named: ["a\u{0}b"], inZone: zone.id) },
            ]
            for attempt in attempts {
                do {
                    try await storage.write(attempt)
                    Issue.record("PostgreSQL took a name holding U+0000")
                } catch let error as CloudError {
                    #expect(error.code == .badRequest && error.reason.contains("U+0000"), "\(error)")
                }
            }
            let stored = try await storage.read { transaction in
                try await transaction.changes(inZone: zone.id, after: 0, recordTypes: nil, limit: 100)
            }
            #expect(stored.isEmpty, "a name was stored cut: \(stored.map(\.name))")
            #expect(try await storage.read { try await $0.containerTokenHash(named: "a") } == nil)
        }
    }

    // MARK: Helpers

    /// Opens a fresh store of `store`'s kind and runs `body` on its storage.
    static func withStorage(_ store: TestStore, _ body: (any ServerStorage) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-names-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let services = try await store.makeServices(directory: directory)
        do {
            try await body(services.services[0].storage)
        } catch {
            await services.close()
            throw error
        }
        await services.close()
    }

    /// A live record row whose name, type, creator, field and reference are all `name`.
    static func row(_ name: String, zone: String, serial: Int64 = 1) -> StoredRecord {
        StoredRecord(
            name: name, recordType: name, serial: serial, creator: name,
            record: Record(
                recordType: name, recordName: name, zoneID: ZoneID(zoneName: zone), fields: [name: .string(name)]),
            deleteSelfTargets: [name])
    }

    /// Writes every kind of name once per spelling, side by side where the
    /// schema keys them (one database, one zone, one container), then reads
    /// each back.
    static func roundTrip(_ names: [String], in storage: any ServerStorage) async throws {
        let container = "iCloud.names"
        let key = DatabaseKey(container: container, environment: .development, scope: .private, owner: "owner")
        let owners = names.map {
            DatabaseKey(container: container, environment: .development, scope: .private, owner: $0)
        }
        let (database, home, zones, owned) = try await storage.write { transaction in
            let database = try await transaction.createDatabase(key, incarnation: 1)
            let home = try await transaction.createZone(named: "Z", inDatabase: database.id, incarnation: 1)
            var zones: [StoredZone] = []
            var owned: [Int64] = []
            for (index, name) in names.enumerated() {
                zones.append(try await transaction.createZone(named: name, inDatabase: database.id, incarnation: 1))
                try await transaction.saveSubscription(
                    StoredSubscription(
                        user: name, subscription: Subscription(subscriptionID: name, zoneID: ZoneID(zoneName: name))),
                    inDatabase: database.id)
                #expect(try await transaction.createContainer(named: name, tokenHash: "container-\(index)"))
                #expect(
                    try await transaction.createUser(
                        named: name, recordName: name, tokenHash: "user-\(index)", container: container))
                owned.append(try await transaction.createDatabase(owners[index], incarnation: 1).id)
                try await transaction.createChannel(
                    StoredChannel(
                        tokenHash: "channel-\(index)",
                        key: DatabaseKey(container: name, environment: .development, scope: .private, owner: name),
                        user: name, start: 1, lastUsed: 1))
            }
            try await transaction.logZoneChanges(
                names.map { ZoneLogEntry(zoneName: $0, serial: 1, deleted: false) }, inDatabase: database.id)
            try await transaction.saveRecords(names.map { row($0, zone: "Z") }, inZone: home.id)
            try await transaction.addFieldTypes(
                names.map { StoredFieldType(recordType: $0, fieldName: $0, type: .string) }, container: container,
                environment: .development)
            // Only the first spelling's user is full.
            try await transaction.setQuotaExceeded(
                true, user: names[0], container: container, environment: .development)
            return (database.id, home.id, zones, owned)
        }
        #expect(Set(zones.map(\.id)).count == names.count)
        #expect(Set(owned).count == names.count)
        let expected = Set(names.map { Array($0.utf8) })

        try await storage.read { transaction in
            let all = try await transaction.zones(inDatabase: database, named: nil)
            #expect(Set(all.map { Array($0.name.utf8) }) == expected.union([Array("Z".utf8)]))
            let log = try await transaction.zoneLog(inDatabase: database, after: 0, limit: 10)
            #expect(Set(log.map { Array($0.zoneName.utf8) }) == expected)
            #expect(try await transaction.records(named: names, inZone: home).count == names.count)
            let subscriptions = try await transaction.subscriptions(inDatabase: database, user: nil)
            #expect(Set(subscriptions.map { Array($0.subscription.subscriptionID.utf8) }) == expected)
            let types = try await transaction.fieldTypes(container: container, environment: .development)
            #expect(Set(types.map { Array($0.recordType.utf8) }) == expected)
            #expect(Set(types.map { Array($0.fieldName.utf8) }) == expected)

            for (index, name) in names.enumerated() {
                let bytes = Array(name.utf8)
                let named = try await transaction.zones(inDatabase: database, named: [name])
                #expect(named.map(\.id) == [zones[index].id] && named.map { Array($0.name.utf8) } == [bytes])
                #expect(try await transaction.database(owners[index])?.id == owned[index])

                let records = try await transaction.records(named: [name], inZone: home)
                try #require(records.count == 1, "\(records.map(\.name))")
                expectExact(records[0], name)
                let changes = try await transaction.changes(inZone: home, after: 0, recordTypes: [name], limit: 10)
                try #require(changes.count == 1)
                #expect(Array(changes[0].name.utf8) == bytes)
                guard case .encoded(let body) = changes[0].contents else {
                    Issue.record("a stored change was not its stored wire form: \(changes[0].contents)")
                    continue
                }
                let changed = try WireFormat.decodeRecord(from: body)
                #expect(Array(changed.recordName.utf8) == bytes)
                #expect(changed.fields.keys.map { Array($0.utf8) } == [bytes])
                let live = try await transaction.liveRecords(ofType: name, inZone: home)
                #expect(live.map { $0.record.map { Array($0.recordName.utf8) } } == [bytes])
                let referrers = try await transaction.deleteSelfReferrers(of: [name], inZone: home)
                #expect(referrers.map { Array($0.utf8) } == [bytes])

                let mine = try await transaction.subscriptions(inDatabase: database, user: name)
                #expect(mine.map { Array($0.user.utf8) } == [bytes])
                #expect(mine.map { Array($0.subscription.subscriptionID.utf8) } == [bytes])
                #expect(mine.map { Array($0.subscription.zoneID.zoneName.utf8) } == [bytes])

                #expect(try await transaction.containerTokenHash(named: name) == "container-\(index)")
                let user = try await transaction.userRecordName(container: container, tokenHash: "user-\(index)")
                #expect(user.map { Array($0.utf8) } == bytes)
                let channel = try #require(try await transaction.channel(tokenHash: "channel-\(index)"))
                #expect(Array(channel.key.container.utf8) == bytes && Array(channel.key.owner.utf8) == bytes)
                #expect(Array(channel.user.utf8) == bytes)
                let full = try await transaction.isQuotaExceeded(
                    user: name, container: container, environment: .development)
                #expect(full == (index == 0), "\(index)")
            }
        }
    }

    static func expectExact(_ row: StoredRecord, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = Array(name.utf8)
        #expect(Array(row.name.utf8) == bytes, sourceLocation: sourceLocation)
        #expect(Array(row.recordType.utf8) == bytes, sourceLocation: sourceLocation)
        #expect(row.creator.map { Array($0.utf8) } == bytes, sourceLocation: sourceLocation)
        let record = row.record
        #expect(record.map { Array($0.recordName.utf8) } == bytes, sourceLocation: sourceLocation)
        #expect(record?.fields.keys.map { Array($0.utf8) } == [bytes], sourceLocation: sourceLocation)
    }
}
