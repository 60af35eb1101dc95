import Cumulus
import Foundation
import Testing

@Suite("The wire form of answers")
struct WireResponseTests {
    typealias F = WireFixtures

    /// Every answer with the operation the client asked, covering each kind of entry.
    static let answers: [(CloudOperation, CloudResponse)] = [
        (
            .modifyRecords,
            .records([
                .record(F.fullRecord()),
                .deleted(recordName: "gone", zoneID: F.zone),
                .failure(F.conflict()),
                .failure(
                    CloudError(
                        .throttled, reason: "slow down", retryAfter: .milliseconds(1500), recordName: "r2",
                        zoneID: F.otherZone)),
                .failure(CloudError(.exists, reason: "", recordName: "r3")),
            ])
        ),
        (.lookupRecords, .records([])),
        (
            .lookupRecords,
            .records([.record(F.note(1)), .failure(CloudError(.notFound, reason: "no", recordName: "x"))])
        ),
        (.queryRecords, .query(QueryResult(records: [F.note(1), F.note(2)], continuationMarker: "next"))),
        (.queryRecords, .query(QueryResult(records: [], continuationMarker: nil))),
        (
            .fetchZoneChanges,
            .zoneChanges([
                .success(
                    ZoneChanges(
                        zoneID: F.zone,
                        records: [.record(F.note(1)), .deleted(recordName: "d", zoneID: F.zone)],
                        syncToken: SyncToken(rawValue: "s1"), moreComing: true)),
                .failure(
                    CloudError(
                        .zoneNotFound, reason: "no zone", retryAfter: .seconds(3), zoneID: F.otherZone, uuid: "u")),
                .success(
                    ZoneChanges(
                        zoneID: .defaultZone, records: [], syncToken: SyncToken(rawValue: ""), moreComing: false)),
            ])
        ),
        (
            .fetchDatabaseChanges,
            .databaseChanges(
                DatabaseChanges(
                    changedZones: [F.zone, .defaultZone], deletedZones: [F.otherZone],
                    syncToken: SyncToken(rawValue: "db"), moreComing: true))
        ),
        (
            .fetchDatabaseChanges,
            .databaseChanges(
                DatabaseChanges(
                    changedZones: [], deletedZones: [], syncToken: SyncToken(rawValue: "db"), moreComing: false))
        ),
        (
            .listZones,
            .zones([RecordZone(zoneID: F.zone, syncToken: SyncToken(rawValue: "z")), RecordZone(zoneID: .defaultZone)])
        ),
        (
            .modifyZones,
            .zoneResults([
                .zone(RecordZone(zoneID: F.zone)), .deleted(F.otherZone),
                .failure(CloudError(.accessDenied, reason: "no", zoneID: F.zone)),
            ])
        ),
        (.lookupZones, .zoneResults([])),
        (.listSubscriptions, .subscriptions([Subscription(subscriptionID: "s1", zoneID: F.zone)])),
        (
            .modifySubscriptions,
            .subscriptionResults([
                .subscription(Subscription(subscriptionID: "s1", zoneID: F.otherZone)), .deleted("s2"),
                .failure(CloudError(.notFound, reason: "no such subscription")),
            ])
        ),
        (.currentUser, .user(UserIdentity(userRecordName: "_ü"))),
        (
            .createToken,
            .token(NotificationToken(apnsEnvironment: "development", apnsToken: "t", webcourierURL: "https://h/p?x=1"))
        ),
        (
            .fetchRecordChanges,
            .recordChanges(
                ZoneChanges(
                    zoneID: F.zone, records: [.record(F.note(1)), .deleted(recordName: "gone", zoneID: F.zone)],
                    syncToken: SyncToken(rawValue: "z1"), moreComing: true))
        ),
        (
            .fetchChangedZones,
            .databaseChanges(
                DatabaseChanges(
                    changedZones: [F.zone], deletedZones: [F.otherZone], syncToken: SyncToken(rawValue: "d1"),
                    moreComing: false))
        ),
        (
            .requestAssetUploads,
            .assetUploads([
                AssetUploadTarget(
                    recordName: "n1", fieldName: "photo", url: "https://cloud.example/assets/1/upload/t1"),
                AssetUploadTarget(recordName: "ü", fieldName: "f", url: "/assets/1/upload/t2"),
            ])
        ),
        (.requestAssetUploads, .assetUploads([])),
    ]

    @Test("every answer reads back as it was written", arguments: answers.indices)
    func roundTrip(_ index: Int) throws {
        let (operation, answer) = Self.answers[index]
        let back = try CloudResponse.decode(operation, body: try answer.encodedBody())
        #expect(back == answer)
    }

    @Test("a page of 200 changed records reads back exactly")
    func twoHundredRecords() throws {
        var records: [RecordResult] = (0..<200).map { .record($0 % 10 == 0 ? F.fullRecord("full-\($0)") : F.note($0)) }
        records[7] = .deleted(recordName: "deleted-7", zoneID: F.zone)
        let answer = CloudResponse.zoneChanges([
            .success(
                ZoneChanges(zoneID: F.zone, records: records, syncToken: SyncToken(rawValue: "p2"), moreComing: true))
        ])
        let body = try answer.encodedBody()
        guard case .zoneChanges(let zones) = try CloudResponse.decode(.fetchZoneChanges, body: body),
            case .success(let changes) = zones.first
        else {
            Issue.record("not a zone changes answer")
            return
        }
        #expect(changes.records.count == 200)
        for index in records.indices {
            #expect(changes.records[index] == records[index])
        }
        #expect(changes.syncToken.rawValue == "p2")
        #expect(changes.moreComing)
    }

    @Test("a changes/zone answer in CloudKit's shape: entries without zones take the zone's")
    func zoneChangesShape() throws {
        let body = """
            {"zones":[{"records":[
                {"recordType":"Note","recordName":"a","recordChangeTag":"1","fields":{"n":{"value":"5","type":"INT64"}},"x":1},
                {"deleted":true,"recordName":"b"},
                {"recordName":"c","reason":"oops","serverErrorCode":"INTERNAL_ERROR","retryAfter":2.5}
              ],"moreComing":false,"syncToken":"T","zoneID":{"zoneName":"Z"},"extra":{}}],"more":1}
            """
        let zone = ZoneID(zoneName: "Z")
        let answer = try CloudResponse.decode(.fetchZoneChanges, body: utf8(body))
        var record = Record(recordType: "Note", recordName: "a", zoneID: zone, fields: ["n": .int64(5)])
        record.metadata = RecordMetadata(changeTag: "1", zoneID: zone)
        let expected = CloudResponse.zoneChanges([
            .success(
                ZoneChanges(
                    zoneID: zone,
                    records: [
                        .record(record), .deleted(recordName: "b", zoneID: zone),
                        .failure(
                            CloudError(.internalError, reason: "oops", retryAfter: .milliseconds(2500), recordName: "c")
                        ),
                    ], syncToken: SyncToken(rawValue: "T"), moreComing: false))
        ])
        #expect(answer == expected)
    }

    @Test("an entry with serverErrorCode is an error, even when it looks like a record")
    func errorEntry() throws {
        let body =
            #"{"records":[{"recordName":"a","recordType":"T","serverErrorCode":"EXISTS","reason":"taken","serverRecord":{"recordName":"a","recordType":"T","recordChangeTag":"9"}}]}"#
        let answer = try CloudResponse.decode(.modifyRecords, body: utf8(body))
        guard case .records(let results) = answer, let error = results.first?.error else {
            Issue.record("expected an error entry: \(answer)")
            return
        }
        #expect(error.code == .exists)
        #expect(error.recordName == "a")
        #expect(error.serverRecord?.changeTag == "9")
    }

    /// Answers that are not valid, for the operation asked.
    static let badAnswers: [(CloudOperation, String)] = [
        (.modifyRecords, ""),
        (.modifyRecords, "{}"),
        (.requestAssetUploads, "{}"),
        (.requestAssetUploads, #"{"tokens":[{"recordName":"a","fieldName":"f"}]}"#),
        (.modifyRecords, #"{"records":[{"recordName":"a"}]}"#),
        (.modifyRecords, #"{"records":[{"recordName":"a","recordType":"T""#),
        (.queryRecords, #"{"records":[{"recordName":"a","deleted":true}]}"#),
        (.fetchZoneChanges, #"{"zones":[{"zoneID":{"zoneName":"Z"},"records":[]}]}"#),
        (.fetchDatabaseChanges, #"{"zones":[]}"#),
        (.listZones, #"{"zones":[{"syncToken":"x"}]}"#),
        (.listSubscriptions, #"{"subscriptions":[{"subscriptionID":"s"}]}"#),
        (.currentUser, #"{"name":"x"}"#),
        (.createToken, #"{"apnsEnvironment":"development"}"#),
        (.modifyRecords, "<html>bad gateway</html>"),
    ]

    @Test("an answer that is not valid is INTERNAL_ERROR naming the operation", arguments: badAnswers.indices)
    func badAnswer(_ index: Int) {
        let (operation, body) = Self.badAnswers[index]
        let error = cloudError { try CloudResponse.decode(operation, body: utf8(body)) }
        #expect(error?.code == .internalError)
        #expect(error?.reason.hasPrefix("the server's answer to \(operation.rawValue) is not valid: ") == true)
    }

    @Test("every truncation of a valid answer is an error, never a trap")
    func truncations() throws {
        let body = try Self.answers[0].1.encodedBody()
        for count in stride(from: 0, to: body.count, by: 5) {
            #expect(cloudError { try CloudResponse.decode(.modifyRecords, body: Array(body.prefix(count))) } != nil)
        }
    }
}
