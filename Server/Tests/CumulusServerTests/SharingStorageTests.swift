import Cumulus
import CumulusServer
import Foundation
import Testing

/// What sharing keeps in storage, through the `StorageTransaction` API, as
/// `InMemoryStorage` does it: records' parents and share keys, shares by
/// zone, shortGUID and accepting participant, the zone log's owners, and
/// users' email addresses. Every name is checked byte for byte.
@Suite("Storage for sharing")
struct SharingStorageTests {
    static let container = "iCloud.sharing"
    static let key = DatabaseKey(container: container, environment: .development, scope: .private, owner: "_owner")
    /// Two spellings Swift's `==` calls equal.
    static let nfc = "caf\u{E9}"
    static let nfd = "cafe\u{301}"

    @Test(
        "parents and share keys round trip on rows, live records and changes; children are found by parent",
        arguments: TestStore.single)
    func parentsAndShareKeys(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let zone = try await Self.makeZone(storage)
            try await storage.write { transaction async throws in
                try await transaction.saveRecords(
                    [
                        Self.row("root", serial: 1, shareKey: "guid-1"),
                        Self.row("child-a", serial: 2, parent: "root", shareKey: "guid-1"),
                        Self.row(Self.nfc, serial: 3, parent: Self.nfd, formerShareKey: "guid-0"),
                        Self.row("child-b", serial: 4, parent: "root", shareKey: "guid-1", formerShareKey: "guid-0"),
                        Self.row("other", serial: 5, parent: Self.nfc),
                    ], inZone: zone.id)
            }
            try await storage.read { transaction async throws in
                let rows = try await transaction.records(
                    named: ["root", "child-a", Self.nfc, "child-b"], inZone: zone.id)
                let byName = Dictionary(uniqueKeysWithValues: rows.map { (Array($0.name.utf8), $0) })
                #expect(byName[Array("root".utf8)]?.parent == nil)
                #expect(byName[Array("root".utf8)]?.shareKey == "guid-1")
                #expect(byName[Array("child-a".utf8)]?.parent == "root")
                let odd = try #require(byName[Array(Self.nfc.utf8)])
                #expect(odd.parent.map { Array($0.utf8) } == Array(Self.nfd.utf8))
                #expect(odd.shareKey == nil && odd.formerShareKey == "guid-0")
                #expect(byName[Array("child-b".utf8)]?.formerShareKey == "guid-0")

                let children = try await transaction.children(of: ["root"], inZone: zone.id)
                #expect(children.map(\.name) == ["child-a", "child-b"])
                #expect(children.allSatisfy { $0.record != nil && $0.parent == "root" && $0.shareKey == "guid-1" })
                // Parents are exact names: the NFC record is no child of its NFC spelling.
                let underNFD = try await transaction.children(of: [Self.nfd], inZone: zone.id)
                #expect(underNFD.map { Array($0.name.utf8) } == [Array(Self.nfc.utf8)])
                let underNFC = try await transaction.children(of: [Self.nfc], inZone: zone.id)
                #expect(underNFC.map(\.name) == ["other"])
                #expect(try await transaction.children(of: ["child-a", "nobody"], inZone: zone.id).isEmpty)

                let live = try await transaction.liveRecords(ofType: "Item", inZone: zone.id)
                #expect(live.count == 5)
                #expect(live.first { $0.name == "child-b" }?.formerShareKey == "guid-0")
                #expect(live.first { $0.name == "child-a" }?.parent == "root")

                let changes = try await transaction.changes(inZone: zone.id, after: 0, recordTypes: nil, limit: 10)
                #expect(changes.map(\.serial) == [1, 2, 3, 4, 5])
                #expect(changes.map(\.shareKey) == ["guid-1", "guid-1", nil, "guid-1", nil])
                #expect(changes.map(\.formerShareKey) == [nil, nil, "guid-0", "guid-0", nil])
            }
            // A tombstone keeps its share keys and leaves its parent's children.
            try await storage.write { transaction async throws in
                try await transaction.saveRecords(
                    [
                        StoredRecord(
                            name: "child-a", recordType: "Item", serial: 6, creator: nil, record: nil,
                            deleteSelfTargets: [], shareKey: "guid-1", formerShareKey: "guid-0")
                    ], inZone: zone.id)
            }
            try await storage.read { transaction async throws in
                #expect(try await transaction.children(of: ["root"], inZone: zone.id).map(\.name) == ["child-b"])
                let changes = try await transaction.changes(inZone: zone.id, after: 5, recordTypes: ["Item"], limit: 10)
                #expect(changes.count == 1 && changes.first?.contents == .deleted)
                #expect(changes.first?.shareKey == "guid-1" && changes.first?.formerShareKey == "guid-0")
                let tombstone = try await transaction.records(named: ["child-a"], inZone: zone.id)
                #expect(tombstone.first?.record == nil && tombstone.first?.shareKey == "guid-1")
            }
        }
    }

    @Test(
        "shares are saved, replaced, found by zone, shortGUID and accepting user, and deleted",
        arguments: TestStore.single)
    func shares(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let zone = try await Self.makeZone(storage)
            let other = try await Self.makeZone(storage, name: "Other")
            let first = Self.share(
                "guid-" + Self.nfc, zone: zone, recordName: "share-1", root: "root",
                accepted: ["_bob", Self.nfc], pending: ["_carol"])
            let second = Self.share("guid-2", zone: zone, recordName: ShareDetails.zoneShareName, accepted: ["_bob"])
            // The same user accepted in another container: never found from this one.
            let elsewhere = Self.share(
                "guid-3", zone: other, recordName: "share-3", accepted: ["_bob"], container: "iCloud.elsewhere")
            try await storage.write { transaction async throws in
                for share in [first, second, elsewhere] { try await transaction.saveShare(share) }
            }
            try await storage.read { transaction async throws in
                let inZone = try await transaction.shares(inZone: zone.id)
                #expect(inZone == [second, first].sorted { ExactName($0.recordName) < ExactName($1.recordName) })
                #expect(try await transaction.share(shortGUID: "guid-" + Self.nfc) == first)
                #expect(try await transaction.share(shortGUID: "guid-" + Self.nfd) == nil)
                #expect(try await transaction.share(shortGUID: "guid-9") == nil)
                let bobs = try await transaction.shares(
                    acceptedBy: "_bob", container: Self.container, environment: .development)
                #expect(bobs.map(\.shortGUID) == ["guid-2", "guid-" + Self.nfc])
                #expect(
                    try await transaction.shares(
                        acceptedBy: "_bob", container: Self.container, environment: .production
                    )
                    .isEmpty)
                let elsewhereBobs = try await transaction.shares(
                    acceptedBy: "_bob", container: "iCloud.elsewhere", environment: .development)
                #expect(elsewhereBobs == [elsewhere])
                // Exact names: the NFD spelling of an accepting user accepted nothing.
                let nfc = try await transaction.shares(
                    acceptedBy: Self.nfc, container: Self.container, environment: .development)
                #expect(nfc.map(\.shortGUID) == ["guid-" + Self.nfc])
                #expect(
                    try await transaction.shares(
                        acceptedBy: Self.nfd, container: Self.container, environment: .development
                    )
                    .isEmpty)
                // A pending participant has accepted nothing.
                #expect(
                    try await transaction.shares(
                        acceptedBy: "_carol", container: Self.container, environment: .development
                    )
                    .isEmpty)
            }

            // Replacing a share replaces its participants and may give it a new shortGUID.
            var replacing = first
            replacing.shortGUID = "guid-new"
            replacing.publicPermission = .readWrite
            replacing.participants = [replacing.participants[0], Self.participant("_carol", .accepted)]
            let replaced = replacing
            try await storage.write { transaction in try await transaction.saveShare(replaced) }
            try await storage.read { transaction async throws in
                #expect(try await transaction.share(shortGUID: "guid-" + Self.nfc) == nil)
                #expect(try await transaction.share(shortGUID: "guid-new") == replaced)
                #expect(try await transaction.shares(inZone: zone.id).count == 2)
                let bobs = try await transaction.shares(
                    acceptedBy: "_bob", container: Self.container, environment: .development)
                #expect(bobs.map(\.shortGUID) == ["guid-2"])
                let carols = try await transaction.shares(
                    acceptedBy: "_carol", container: Self.container, environment: .development)
                #expect(carols == [replaced])
            }

            try await storage.write { transaction async throws in
                try await transaction.deleteShare(recordName: ShareDetails.zoneShareName, inZone: zone.id)
                try await transaction.deleteShare(recordName: "no-such-share", inZone: zone.id)
            }
            try await storage.read { transaction async throws in
                #expect(try await transaction.shares(inZone: zone.id) == [replaced])
                #expect(try await transaction.share(shortGUID: "guid-2") == nil)
                #expect(
                    try await transaction.shares(
                        acceptedBy: "_bob", container: Self.container, environment: .development
                    )
                    .isEmpty)
            }
        }
    }

    @Test(
        "deleting a zone deletes its shares and what finds them; a recreated zone has none",
        arguments: TestStore.single)
    func zoneDeletionDeletesShares(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let zone = try await Self.makeZone(storage)
            let kept = try await Self.makeZone(storage, name: "Kept")
            try await storage.write { transaction async throws in
                try await transaction.saveShare(Self.share("guid-1", zone: zone, recordName: "s", accepted: ["_bob"]))
                try await transaction.saveShare(Self.share("guid-2", zone: kept, recordName: "s", accepted: ["_bob"]))
                try await transaction.deleteZone(zone)
            }
            let recreated = try await Self.makeZone(storage)
            try await storage.read { transaction async throws in
                #expect(try await transaction.share(shortGUID: "guid-1") == nil)
                #expect(try await transaction.shares(inZone: recreated.id).isEmpty)
                let bobs = try await transaction.shares(
                    acceptedBy: "_bob", container: Self.container, environment: .development)
                #expect(bobs.map(\.shortGUID) == ["guid-2"])
            }
            // The shortGUID is free again once its share is gone.
            try await storage.write { transaction async throws in
                try await transaction.saveShare(Self.share("guid-1", zone: recreated, recordName: "s", accepted: []))
            }
            #expect(try await storage.read { try await $0.share(shortGUID: "guid-1") }?.zone == recreated.id)
        }
    }

    @Test("the zone log keeps one entry per owner and zone name", arguments: TestStore.single)
    func zoneLogOwners(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let shared = DatabaseKey(
                container: Self.container, environment: .development, scope: .shared, owner: "_bob")
            let database = try await storage.write { transaction async throws in
                let database = try await transaction.createDatabase(shared, incarnation: 1)
                try await transaction.logZoneChanges(
                    [
                        ZoneLogEntry(zoneName: "Notes", ownerRecordName: "_alice", serial: 1, deleted: false),
                        ZoneLogEntry(zoneName: "Notes", ownerRecordName: "_carol", serial: 2, deleted: false),
                        ZoneLogEntry(zoneName: "Notes", serial: 3, deleted: false),
                        ZoneLogEntry(zoneName: "Notes", ownerRecordName: Self.nfc, serial: 4, deleted: false),
                        ZoneLogEntry(zoneName: "Notes", ownerRecordName: Self.nfd, serial: 5, deleted: false),
                    ], inDatabase: database.id)
                return database.id
            }
            try await storage.write { transaction async throws in
                try await transaction.logZoneChanges(
                    [ZoneLogEntry(zoneName: "Notes", ownerRecordName: "_alice", serial: 6, deleted: true)],
                    inDatabase: database)
            }
            let log = try await storage.read { try await $0.zoneLog(inDatabase: database, after: 0, limit: 10) }
            #expect(log.map(\.serial) == [2, 3, 4, 5, 6])
            #expect(
                log.map { Array($0.ownerRecordName.utf8) }
                    == ["_carol", "", Self.nfc, Self.nfd, "_alice"].map {
                        Array($0.utf8)
                    })
            #expect(log.map(\.deleted) == [false, false, false, false, true])
            #expect(log.allSatisfy { $0.zoneName == "Notes" })
        }
    }

    @Test(
        "users get email addresses by record name, found by exact address and record name within their container",
        arguments: TestStore.single)
    func userEmails(_ store: TestStore) async throws {
        try await StorageNameTests.withStorage(store) { storage in
            let nfcAddress = Self.nfc + "@example.com"
            let nfdAddress = Self.nfd + "@example.com"
            try await storage.write { transaction async throws in
                for container in [Self.container, "iCloud.elsewhere"] {
                    #expect(try await transaction.createContainer(named: container, tokenHash: container))
                    for user in ["alice", "bob", "carol"] {
                        #expect(
                            try await transaction.createUser(
                                named: user, recordName: "_" + user, tokenHash: container + user, container: container))
                    }
                }
                #expect(
                    try await transaction.setUserEmail(
                        nfcAddress, discoverable: true, recordName: "_alice", container: Self.container))
                #expect(
                    try await transaction.setUserEmail(
                        nfdAddress, discoverable: false, recordName: "_bob", container: Self.container))
                // Another container's user with the same address.
                #expect(
                    try await transaction.setUserEmail(
                        nfcAddress, discoverable: true, recordName: "_carol", container: "iCloud.elsewhere"))
                #expect(
                    try await !transaction.setUserEmail(
                        "x@example.com", discoverable: true, recordName: "_nobody", container: Self.container))
                #expect(
                    try await !transaction.setUserEmail(
                        "x@example.com", discoverable: true, recordName: "_alice", container: "iCloud.unknown"))
            }
            try await storage.read { transaction async throws in
                let byNFC = try await transaction.users(withEmailAddresses: [nfcAddress], container: Self.container)
                #expect(byNFC == [StoredUser(recordName: "_alice", emailAddress: nfcAddress, isDiscoverable: true)])
                #expect(byNFC.map { $0.emailAddress.map { Array($0.utf8) } } == [Array(nfcAddress.utf8)])
                let byNFD = try await transaction.users(withEmailAddresses: [nfdAddress], container: Self.container)
                #expect(byNFD == [StoredUser(recordName: "_bob", emailAddress: nfdAddress, isDiscoverable: false)])
                #expect(byNFD.map { $0.emailAddress.map { Array($0.utf8) } } == [Array(nfdAddress.utf8)])
                let both = try await transaction.users(
                    withEmailAddresses: [nfdAddress, nfcAddress, "x@example.com"], container: Self.container)
                #expect(both.map(\.recordName) == ["_alice", "_bob"])
                let elsewhere = try await transaction.users(
                    withEmailAddresses: [nfcAddress, nfdAddress], container: "iCloud.elsewhere")
                #expect(elsewhere.map(\.recordName) == ["_carol"])
                #expect(try await transaction.users(withEmailAddresses: [], container: Self.container).isEmpty)

                let named = try await transaction.users(
                    withRecordNames: ["_carol", "_alice", "_nobody"], container: Self.container)
                #expect(
                    named == [
                        StoredUser(recordName: "_alice", emailAddress: nfcAddress, isDiscoverable: true),
                        StoredUser(recordName: "_carol", emailAddress: nil, isDiscoverable: false),
                    ])
                let carolElsewhere = try await transaction.users(
                    withRecordNames: ["_carol"], container: "iCloud.elsewhere")
                #expect(carolElsewhere.map(\.emailAddress) == [nfcAddress])
                #expect(try await transaction.users(withRecordNames: ["_alice"], container: "iCloud.unknown").isEmpty)
            }
            // Taking the address away.
            try await storage.write { transaction async throws in
                #expect(
                    try await transaction.setUserEmail(
                        nil, discoverable: false, recordName: "_alice", container: Self.container))
            }
            try await storage.read { transaction async throws in
                #expect(
                    try await transaction.users(withEmailAddresses: [nfcAddress], container: Self.container).isEmpty)
                let alice = try await transaction.users(withRecordNames: ["_alice"], container: Self.container)
                #expect(alice == [StoredUser(recordName: "_alice", emailAddress: nil, isDiscoverable: false)])
            }
        }
    }

    // MARK: Helpers

    /// A zone of ``key``'s database.
    static func makeZone(_ storage: any ServerStorage, name: String = "Notes") async throws -> StoredZone {
        try await storage.write { transaction async throws in
            let database = try await transaction.createDatabase(key, incarnation: 1)
            return try await transaction.createZone(named: name, inDatabase: database.id, incarnation: 1)
        }
    }

    static func row(
        _ name: String, serial: Int64, parent: String? = nil, shareKey: String? = nil, formerShareKey: String? = nil
    ) -> StoredRecord {
        var record = Record(recordType: "Item", recordName: name, zoneID: ZoneID(zoneName: "Notes"))
        record.fields["title"] = .string(name)
        return StoredRecord(
            name: name, recordType: "Item", serial: serial, creator: "_owner", record: record, deleteSelfTargets: [],
            parent: parent, shareKey: shareKey, formerShareKey: formerShareKey)
    }

    static func participant(_ user: String, _ status: ShareAcceptanceStatus, role: ShareParticipantRole = .user)
        -> ShareParticipant
    {
        ShareParticipant(
            participantID: "p-" + user, userRecordName: user, lookupInfo: .user(user),
            nameComponents: UserNameComponents(givenName: user), role: role, acceptanceStatus: status,
            permission: .readWrite)
    }

    /// A share owned by `_owner`, with the owner first, then the accepted users, then the pending ones.
    static func share(
        _ shortGUID: String, zone: StoredZone, recordName: String, root: String? = nil, accepted: [String],
        pending: [String] = [], container: String = container
    ) -> StoredShare {
        StoredShare(
            shortGUID: shortGUID, container: container, environment: .development, owner: "_owner", zone: zone.id,
            zoneName: zone.name, recordName: recordName, rootRecordName: root, publicPermission: .none,
            participants: [participant("_owner", .accepted, role: .owner)] + accepted.map { participant($0, .accepted) }
                + pending.map { participant($0, .pending) })
    }
}
