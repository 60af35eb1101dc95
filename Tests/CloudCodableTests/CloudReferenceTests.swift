import Foundation
import Testing

@testable import CloudCodable

private struct Album: CloudCodable, Identifiable, Equatable {
    var id: String
    var title = ""
    var cloudMetadata: RecordMetadata?
}

private struct Photo: CloudCodable, Identifiable, Equatable {
    struct Caption: Codable, Equatable {
        var text: String
        var album: CloudReference<Album>
    }

    var id: String
    var album: CloudReference<Album>
    var cover: CloudReference<Album>?
    var related: [CloudReference<Album>] = []
    var caption: Caption?
    var cloudMetadata: RecordMetadata?
}

@Suite("CloudReference")
struct CloudReferenceTests {
    let encoder = RecordEncoder()
    let decoder = RecordDecoder()
    let zone = ZoneID(zoneName: "Library")

    fileprivate func photo() -> Photo {
        Photo(
            id: "p1", album: CloudReference(Album(id: "a1"), action: .deleteSelf),
            related: [CloudReference(identifier: "a2"), CloudReference(identifier: "a3", action: .validate)])
    }

    @Test("a reference is a REFERENCE field without a zone; a list a REFERENCE_LIST; nil no field")
    func fieldTypes() throws {
        let record = try encoder.encode(photo())
        #expect(record["album"] == .reference(Reference(recordName: "a1", action: .deleteSelf)))
        #expect(
            record["related"]
                == .referenceList([Reference(recordName: "a2"), Reference(recordName: "a3", action: .validate)]))
        #expect(record["cover"] == nil)
        #expect(record.fields.count == 3)
        let json = String(decoding: try WireFormat.encode(record), as: UTF8.self)
        #expect(json.contains(#""album":{"type":"REFERENCE","value":{"recordName":"a1","action":"DELETE_SELF"}}"#))

        var empty = photo()
        empty.related = []
        empty.cover = CloudReference(identifier: "a9")
        let other = try encoder.encode(empty)
        #expect(other["related"] == .referenceList([]))
        #expect(other["cover"] == .reference(Reference(recordName: "a9")))
    }

    @Test("references round-trip, through the wire form too, and nested ones as JSON")
    func roundTrip() throws {
        var value = photo()
        value.cover = CloudReference(identifier: "a4", action: .validate)
        value.caption = Photo.Caption(text: "sunset", album: CloudReference(identifier: "a1", action: .deleteSelf))
        let record = try encoder.encode(value)
        #expect(record["caption"]?.type == .bytes)
        #expect(try decoder.decode(Photo.self, from: record) == value)
        let wire = try WireFormat.decodeRecord(from: try WireFormat.encode(record))
        #expect(try decoder.decode(Photo.self, from: wire) == value)
        // An app that keeps its models with JSONEncoder keeps them whole.
        let json = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(Photo.self, from: json) == value)
    }

    @Test("another client's references decode when they name the record's zone, or none")
    func foreignReferences() throws {
        var record = Record(recordType: "Photo", recordName: "p1", zoneID: zone)
        record.metadata = RecordMetadata(changeTag: "t1", zoneID: zone)
        record["id"] = .string("p1")
        record["album"] = .reference(Reference(recordName: "a1", zoneID: zone, action: .deleteSelf))
        record["related"] = .referenceList([
            Reference(recordName: "a2", zoneID: ZoneID(zoneName: "Library", ownerRecordName: "__defaultOwner__")),
            Reference(recordName: "a3"),
        ])
        let decoded = try decoder.decode(Photo.self, from: record)
        #expect(decoded.album == CloudReference(identifier: "a1", action: .deleteSelf))
        #expect(decoded.related.map(\.identifier) == ["a2", "a3"])
        #expect(decoded.cover == nil)
    }

    @Test("a server's record whose reference names another zone does not decode as a CloudReference")
    func otherZoneRefused() throws {
        var record = Record(recordType: "Photo", recordName: "p1", zoneID: zone)
        record.metadata = RecordMetadata(changeTag: "t1", zoneID: zone)
        record["id"] = .string("p1")
        record["album"] = .reference(Reference(recordName: "a1", zoneID: ZoneID(zoneName: "Elsewhere")))
        #expect(throws: DecodingError.self) { try decoder.decode(Photo.self, from: record) }
        record["album"] = .reference(Reference(recordName: "a1"))
        record["related"] = .referenceList([Reference(recordName: "a2", zoneID: ZoneID(zoneName: "Elsewhere"))])
        #expect(throws: DecodingError.self) { try decoder.decode(Photo.self, from: record) }
    }

    @Test("a reference without an identifier is an EncodingError")
    func emptyIdentifier() throws {
        var value = photo()
        value.album = CloudReference(identifier: "")
        #expect(throws: EncodingError.self) { try encoder.encode(value) }
    }

    @Test("a plain Reference keeps its encoding, nested ones included")
    func plainReferencesUnchanged() throws {
        struct Holder: Codable, Equatable {
            var reference: Reference
            var references: Set<Reference>
        }
        struct Model: CloudCodable {
            var id: String
            var holder: Holder
            var set: Set<Reference>
            var cloudIdentifier: String { id }
            var cloudMetadata: RecordMetadata?
        }
        let references: Set<Reference> = [Reference(recordName: "a"), Reference(recordName: "b", action: .validate)]
        let holder = Holder(reference: Reference(recordName: "x", zoneID: zone), references: references)
        let record = try encoder.encode(Model(id: "m", holder: holder, set: references))
        #expect(record["set"]?.type == .bytes)
        guard case .bytes(let json)? = record["holder"] else {
            Issue.record("holder should be BYTES")
            return
        }
        #expect(try JSONDecoder().decode(Holder.self, from: json) == holder)
    }
}
