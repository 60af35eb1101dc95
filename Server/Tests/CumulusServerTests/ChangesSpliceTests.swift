import Cumulus
import CumulusServer
import Foundation
import SQLiteNIO
import Testing

/// A page of changes is written from the records' stored bytes, without
/// decoding them; the answer must be byte for byte the one written from the
/// decoded records, and a damaged stored body must never reach the answer.
@Suite("Pages of changes are written from the stored records")
struct ChangesSpliceTests {
    /// Records holding every field type and the strings and numbers whose
    /// JSON has more than one spelling.
    static func varied(in zone: ZoneID) -> [Record] {
        let strings = [
            "plain", "quote \" and backslash \\", "controls \u{01}\u{1F}\t\n\r", "caf\u{E9}", "cafe\u{301}",
            "emoji 🧭 and \u{2028}", "/slash/", "",
        ]
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        var records: [Record] = []
        for (index, text) in strings.enumerated() {
            records.append(
                Record(
                    recordType: "Everything", recordName: "r\(index) \(text)", zoneID: zone,
                    fields: [
                        "text": .string(text),
                        "int": .int64(index.isMultiple(of: 2) ? Int64.max - Int64(index) : Int64.min + Int64(index)),
                        "double": .double(
                            [0.1, -0.0, 1e300, Double.leastNonzeroMagnitude, 123_456.789, -2.5, 1, 3.0e-7][index]),
                        "stamp": .timestamp(date.addingTimeInterval(Double(index))),
                        "bytes": .bytes(Data((0..<index * 7).map { UInt8($0 * 37 & 0xFF) })),
                        "place": .location(
                            Location(
                                latitude: 48.85 + Double(index), longitude: -2.35, horizontalAccuracy: 5,
                                timestamp: 1_700_000_000_000)),
                        "link": .reference(Reference(recordName: "r0 plain", zoneID: zone)),
                        "texts": .stringList(strings),
                        "ints": .int64List([1, -2, Int64.max]),
                        "doubles": .doubleList([0.5, 1e-10]),
                        "stamps": .timestampList([date]),
                        "blobs": .bytesList([Data([0, 255])]),
                        "empty": .stringList([]),
                    ]))
        }
        return records
    }

    @Test("changes/zone and records/changes write the stored bytes as the decoded records", arguments: TestStore.single)
    func splicedAnswersAreTheDecodedOnes(_ store: TestStore) async throws {
        try await withService(store) { service in
            let alice = caller("alice")
            let zone = ZoneID(zoneName: "Splice")
            try await service.createZone(zone, as: alice)
            let records = Self.varied(in: zone)
            let saved = try await service.modify(records.map { RecordOperation(.create, $0) }, zone: zone, as: alice)
            #expect(saved.allSatisfy { $0.record != nil }, "\(saved)")
            _ = try await service.modify(
                [RecordOperation(.forceDelete, records[3]), RecordOperation(.forceDelete, records[5])], zone: zone,
                as: alice)

            var requests: [CloudRequest] = [
                .fetchZoneChanges([ZoneChangesRequest(zoneID: zone)]),
                .fetchRecordChanges(ZoneChangesRequest(zoneID: zone)),
                // Pages, a zone that does not exist beside one that does, and desiredKeys.
                .fetchZoneChanges([
                    ZoneChangesRequest(zoneID: zone, resultsLimit: 3),
                    ZoneChangesRequest(zoneID: ZoneID(zoneName: "None")),
                ]),
                .fetchZoneChanges([ZoneChangesRequest(zoneID: zone, desiredKeys: ["text", "place"])]),
            ]
            var token: SyncToken?
            repeat {
                let answer = try await service.answer(
                    .fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token, resultsLimit: 4)]), as: alice)
                guard case .zoneChanges(let pages) = try answer.response() else {
                    Issue.record("not zone changes")
                    return
                }
                let page = try pages[0].get()
                requests.append(
                    .fetchZoneChanges([ZoneChangesRequest(zoneID: zone, syncToken: token, resultsLimit: 4)]))
                token = page.moreComing ? page.syncToken : nil
            } while token != nil

            for request in requests {
                let answer = try await service.answer(request, as: alice)
                let decoded = try answer.response()
                #expect(try answer.encodedBody() == decoded.encodedBody(), "\(request)")
                // What the client reads back is what was saved.
                if case .zoneChanges(let pages) = decoded, case .success(let page) = pages[0] {
                    for record in page.records.compactMap(\.record) {
                        let original = try #require(
                            records.first { Array($0.recordName.utf8) == Array(record.recordName.utf8) })
                        if case .fetchZoneChanges(let asked) = request, asked[0].desiredKeys != nil {
                            #expect(record.fields.keys.sorted() == ["place", "text"])
                        } else {
                            #expect(record.fields == original.fields, "\(record.recordName)")
                        }
                    }
                }
            }
        }
    }

    /// Bodies that would change the answer around them if written as they are.
    static let damagedBodies = [
        #"{"recordName":"a"}],"moreComing":true,"injected":[{"a":1}"#,
        #"{"recordName":"a","#,
        "not json",
        #"{"recordName":"a"} {"recordName":"b"}"#,
        #"["#,
    ]

    @Test("A stored body that is not one JSON object is INTERNAL_ERROR, never written", arguments: damagedBodies)
    func damagedBodiesAreRefused(_ body: String) async throws {
        let fixture = try await ServiceFixture.make()
        do {
            let alice = caller("alice")
            try await fixture.service.createZone(as: alice)
            _ = try await fixture.service.modify([RecordOperation(.create, note("n1"))], as: alice)
            let connection = try await SQLiteConnection.open(storage: .file(path: fixture.path))
            _ = try await connection.query(
                "UPDATE records SET body = ? WHERE deleted = 0", [.blob(ByteBuffer(bytes: Array(body.utf8)))])
            try await connection.close()
            let answer = try await fixture.service.answer(
                .fetchZoneChanges([ZoneChangesRequest(zoneID: notesZone)]), as: alice)
            #expect {
                try answer.encodedBody()
            } throws: { error in
                (error as? CloudError)?.code == .internalError
            }
            #expect {
                try answer.response()
            } throws: { error in
                (error as? CloudError)?.code == .internalError
            }
        } catch {
            try await fixture.tearDown()
            throw error
        }
        try await fixture.tearDown()
    }

    private func withService(_ store: TestStore, _ body: (CloudService) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("cumulus-splice-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stores = try await store.makeServices(directory: directory)
        do {
            try await body(stores.services[0])
        } catch {
            await stores.close()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        await stores.close()
        try? FileManager.default.removeItem(at: directory)
    }
}
