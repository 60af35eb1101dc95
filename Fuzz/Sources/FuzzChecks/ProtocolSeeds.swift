import Cumulus
import CumulusServerCore
import Foundation

/// The seeds of `FuzzProtocol`: requests, answers, error dictionaries and
/// notification batches of every operation, as the encoders write them,
/// each after its mode byte (see ``fuzzProtocol(_:_:)``).
enum ProtocolSeeds {
    static let zone = ZoneID(zoneName: "Notes", ownerRecordName: "_owner1")
    static let otherZone = ZoneID(zoneName: "Ünïcødé 🌍 \"zone\"\n")

    /// A record with a field of every type, metadata and an owned zone.
    static func fullRecord(_ name: String = "rec-1", zone: ZoneID = zone) -> Record {
        var record = Record(recordType: "Everything", recordName: name, zoneID: zone)
        let reference = Reference(recordName: "other", zoneID: zone, action: .deleteSelf)
        let asset = Asset(fileChecksum: "abc", size: 42, receipt: "r1", downloadURL: "https://x/y")
        let location = Location(latitude: 37.5, longitude: -122.25, horizontalAccuracy: 5, altitude: 10, timestamp: 17)
        record["string"] = .string("héllo \"wörld\" \\ \u{1F600}\n\t")
        record["int"] = .int64(.min)
        record["double"] = .double(-0.1)
        record["date"] = .timestamp(Date(timeIntervalSince1970: 1_700_000_000.5))
        record["bytes"] = .bytes(Data([0, 1, 2, 250, 255]))
        record["reference"] = .reference(reference)
        record["asset"] = .asset(asset)
        record["location"] = .location(location)
        record["strings"] = .stringList(["a", "ß", ""])
        record["ints"] = .int64List([1, -2, .max])
        record["doubles"] = .doubleList([1.5, 1e-300])
        record["dates"] = .timestampList([Date(timeIntervalSince1970: 1), Date(timeIntervalSince1970: 2.5)])
        record["bytesList"] = .bytesList([Data(), Data([9])])
        record["references"] = .referenceList([reference, Reference(recordName: "r2")])
        record["assets"] = .assetList([asset, Asset()])
        record["locations"] = .locationList([location])
        record.metadata = RecordMetadata(
            changeTag: "tag-1", zoneID: zone,
            created: RecordStamp(timestamp: 1_700_000_000_000, userRecordName: "_u1", deviceID: "d1"),
            modified: RecordStamp(timestamp: 1_700_000_000_500, userRecordName: "_u2"))
        return record
    }

    /// A plain note.
    static func note(_ index: Int, zone: ZoneID = zone) -> Record {
        var record = Record(recordType: "Note", recordName: "note-\(index)", zoneID: zone)
        record["title"] = .string("Note \(index)")
        record["count"] = .int64(Int64(index))
        record["tags"] = .stringList(["a\(index)", "b"])
        record.metadata = RecordMetadata(
            changeTag: "t\(index)", zoneID: zone, created: RecordStamp(timestamp: Int64(index)),
            modified: RecordStamp(timestamp: Int64(index) + 1, userRecordName: "_u"))
        return record
    }

    static let conflict = CloudError(
        .conflict, reason: "the record changed", recordName: "rec-1", zoneID: zone, serverRecord: note(7),
        uuid: "uuid-1")
    static let throttled = CloudError(
        .throttled, reason: "slow down", retryAfter: .milliseconds(1500), recordName: "r2", zoneID: otherZone)

    static let requests: [CloudRequest] = [
        .modifyRecords(
            operations: [
                RecordOperation(.create, fullRecord()),
                RecordOperation(.update, note(1), desiredKeys: ["title", "count"]),
                RecordOperation(.forceReplace, note(2, zone: otherZone)),
                RecordOperation(
                    .delete,
                    Record(
                        recordType: "Note", recordName: "gone", zoneID: zone,
                        metadata: RecordMetadata(changeTag: "t9", zoneID: zone))),
                RecordOperation(.forceDelete, Record(recordType: "Note", recordName: "gone-2", zoneID: zone)),
            ], zoneID: zone, atomic: false),
        .lookupRecords(recordNames: ["a", "ü"], zoneID: zone, desiredKeys: ["title"]),
        .queryRecords(
            RecordQuery(
                recordType: "Note",
                filters: [
                    QueryFilter("title", .beginsWith, .string("x")),
                    QueryFilter("count", .in, .int64List([1, 2])),
                    QueryFilter("where", .notEquals, .location(Location(latitude: 1, longitude: 2))),
                    QueryFilter("___recordID", .in, .referenceList([Reference(recordName: "a", zoneID: zone)])),
                    QueryFilter("___modTime", .lessThanOrEquals, .timestamp(Date(timeIntervalSince1970: 9))),
                ],
                sort: [QuerySort("count", ascending: false), QuerySort("title")]),
            zoneID: zone, resultsLimit: 50, continuationMarker: "m-1", desiredKeys: ["title"]),
        .fetchZoneChanges([
            ZoneChangesRequest(zoneID: zone),
            ZoneChangesRequest(
                zoneID: otherZone, syncToken: SyncToken(rawValue: "tok"), resultsLimit: 200, desiredKeys: [],
                desiredRecordTypes: ["Note"]),
        ]),
        .fetchDatabaseChanges(syncToken: SyncToken(rawValue: "db-1"), resultsLimit: 10),
        .listZones,
        .lookupZones([zone, .defaultZone]),
        .modifyZones([.create(zone), .delete(otherZone)]),
        .modifySubscriptions([.save(Subscription(subscriptionID: "s1", zoneID: zone)), .delete("s2")]),
        .listSubscriptions,
        .lookupSubscriptions(["s1", "s2"]),
        .currentUser,
        .createToken(apnsEnvironment: .development),
        .fetchRecordChanges(
            ZoneChangesRequest(
                zoneID: zone, syncToken: SyncToken(rawValue: "r-1"), resultsLimit: 20, desiredKeys: ["title"],
                desiredRecordTypes: ["Note"])),
        .fetchChangedZones(syncToken: SyncToken(rawValue: "z-1")),
        .resolveShares([ShareLookup(shortGUID: "0abc"), ShareLookup(shortGUID: "ü", fetchRootRecord: true)]),
        .acceptShares([ShareLookup(shortGUID: "0abc", rootRecordDesiredKeys: ["title"])]),
        .lookupUsersByEmail(["a@example.com", "É@example.com"]),
        .lookupUsersByID(["_a", "_ü"]),
        .discoverUsers([.email("a@example.com"), .user("_b"), UserLookupInfo(phoneNumber: "+1 555")]),
        .requestAssetUploads(
            [
                AssetUploadRequest(recordName: "rec-1", recordType: "Note", fieldName: "asset"),
                AssetUploadRequest(recordName: nil, recordType: "Note", fieldName: "assets"),
            ], zoneID: zone),
    ]

    static let answers: [(CloudOperation, CloudResponse)] = [
        (
            .modifyRecords,
            .records([
                .record(fullRecord()), .deleted(recordName: "gone", zoneID: zone), .failure(conflict),
                .failure(throttled),
            ])
        ),
        (.lookupRecords, .records([.record(note(1)), .failure(CloudError(.notFound, reason: "no", recordName: "x"))])),
        (.queryRecords, .query(QueryResult(records: [note(1), fullRecord("rec-2")], continuationMarker: "next"))),
        (
            .fetchZoneChanges,
            .zoneChanges([
                .success(
                    ZoneChanges(
                        zoneID: zone, records: [.record(note(1)), .deleted(recordName: "d", zoneID: zone)],
                        syncToken: SyncToken(rawValue: "s1"), moreComing: true)),
                .failure(CloudError(.zoneNotFound, reason: "no zone", retryAfter: .seconds(3), zoneID: otherZone)),
            ])
        ),
        (
            .fetchDatabaseChanges,
            .databaseChanges(
                DatabaseChanges(
                    changedZones: [zone, .defaultZone], deletedZones: [otherZone],
                    syncToken: SyncToken(rawValue: "db"), moreComing: true))
        ),
        (
            .listZones,
            .zones([RecordZone(zoneID: zone, syncToken: SyncToken(rawValue: "z")), RecordZone(zoneID: .defaultZone)])
        ),
        (
            .lookupZones,
            .zoneResults([
                .zone(RecordZone(zoneID: zone)), .failure(CloudError(.zoneNotFound, reason: "no", zoneID: otherZone)),
            ])
        ),
        (.modifyZones, .zoneResults([.zone(RecordZone(zoneID: zone)), .deleted(otherZone)])),
        (
            .modifySubscriptions,
            .subscriptionResults([
                .subscription(Subscription(subscriptionID: "s1", zoneID: otherZone)), .deleted("s2"),
                .failure(CloudError(.notFound, reason: "no such subscription")),
            ])
        ),
        (.listSubscriptions, .subscriptions([Subscription(subscriptionID: "s1", zoneID: zone)])),
        (.lookupSubscriptions, .subscriptionResults([.subscription(Subscription(subscriptionID: "s1", zoneID: zone))])),
        (.currentUser, .user(UserIdentity(userRecordName: "_ü"))),
        (
            .createToken,
            .token(NotificationToken(apnsEnvironment: "development", apnsToken: "t", webcourierURL: "https://h/p?x=1"))
        ),
    ]

    static let laterAnswers: [(CloudOperation, CloudResponse)] = [
        (
            .fetchRecordChanges,
            .recordChanges(
                ZoneChanges(
                    zoneID: zone, records: [.record(note(1)), .deleted(recordName: "d", zoneID: zone)],
                    syncToken: SyncToken(rawValue: "r2"), moreComing: false))
        ),
        (
            .fetchChangedZones,
            .databaseChanges(
                DatabaseChanges(
                    changedZones: [zone], deletedZones: [], syncToken: SyncToken(rawValue: "z2"), moreComing: false))
        ),
        (.resolveShares, .shares([.failure(shortGUID: "0abc", CloudError(.notFound, reason: "no such share"))])),
        (.acceptShares, .shares([.failure(shortGUID: "0abc", CloudError(.accessDenied, reason: "not invited"))])),
        (
            .lookupUsersByEmail,
            .users([
                UserIdentity(
                    userRecordName: "_a", lookupInfo: .email("a@example.com"),
                    nameComponents: UserNameComponents(givenName: "A", familyName: "Ü"))
            ])
        ),
        (.lookupUsersByID, .users([UserIdentity(userRecordName: "_ü")])),
        (.discoverUsers, .users([])),
        (
            .requestAssetUploads,
            .assetUploads([AssetUploadTarget(recordName: "rec-1", fieldName: "asset", url: "/assets/1/upload/t")])
        ),
    ]

    static let batch = NotificationBatch(
        notifications: [
            .zoneChanged(zone, subscriptionID: "s1"), .zoneChanged(.defaultZone, subscriptionID: nil), .databaseChanged,
            .accountChanged,
        ], cursor: "c-42")

    /// Every seed, named by mode and operation.
    static func all() throws -> [(name: String, bytes: [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        func name(_ prefix: String, _ operation: CloudOperation) -> String {
            "\(prefix)-\(operation.rawValue.replacingOccurrences(of: "/", with: "-"))"
        }
        for request in requests {
            let body = try request.encodedBody() ?? []
            seeds.append((name("request", request.operation), [protocolModeByte(0, request.operation)] + body))
        }
        // One small operation of each type, so that mutations turn one into
        // another (a delete's record is written without its fields).
        for type in RecordOperationType.allCases {
            let request = CloudRequest.modifyRecords(
                operations: [RecordOperation(type, note(1))], zoneID: .defaultZone, atomic: true)
            let body = try request.encodedBody() ?? []
            seeds.append(("request-records-modify-\(type.rawValue)", [protocolModeByte(0, .modifyRecords)] + body))
        }
        // The typeless shape CloudKit's clients send, read through the schema.
        let typeless =
            #"{"operations":[{"operationType":"create","record":{"recordName":"n","recordType":"Note","fields":{"title":{"value":"t"},"count":{"value":3},"tags":{"value":["a"]},"where":{"value":{"latitude":1,"longitude":2}}}}}]}"#
        seeds.append(("request-typeless-records-modify", [protocolModeByte(1, .modifyRecords)] + Array(typeless.utf8)))
        let filter =
            #"{"query":{"recordType":"Note","filterBy":[{"comparator":"EQUALS","fieldName":"date","fieldValue":{"value":1500}}]}}"#
        seeds.append(("request-typeless-records-query", [protocolModeByte(1, .queryRecords)] + Array(filter.utf8)))
        for (operation, answer) in answers + laterAnswers {
            seeds.append((name("answer", operation), [protocolModeByte(2, operation)] + (try answer.encodedBody())))
        }
        for (index, error) in [conflict, throttled, CloudError(.badRequest, reason: "")].enumerated() {
            seeds.append(
                ("error-\(index)", [protocolModeByte(3, CloudOperation.allCases[index])] + error.encodedBody()))
        }
        seeds.append(("batch", [protocolModeByte(4, .modifyRecords)] + batch.encodedBody()))
        return seeds
    }
}
