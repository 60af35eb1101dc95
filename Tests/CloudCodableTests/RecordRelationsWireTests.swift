import Foundation
import Testing

@testable import CloudCodable

/// A record's `parent`, `share` and a share record's keys on the wire: the
/// writer, both paths of the reader, the Codable form, and bad input.
@Suite("Record relations on the wire")
struct RecordRelationsWireTests {
    static let zone = ZoneID(zoneName: "Library")

    static func photo(parent: String? = "album-1") -> Record {
        var record = Record(
            recordType: "Photo", recordName: "photo-1", zoneID: zone, fields: ["caption": .string("Beach")],
            metadata: RecordMetadata(
                changeTag: "t1", zoneID: zone, created: RecordStamp(timestamp: 1, userRecordName: "_u")))
        record.parent = parent
        return record
    }

    static let owner = ShareParticipant(
        participantID: "p0", userRecordName: "_owner", lookupInfo: .user("_owner"),
        nameComponents: UserNameComponents(givenName: "Ada", familyName: "Lovelace"), role: .owner,
        acceptanceStatus: .accepted, permission: .readWrite)

    static func share() -> Record {
        var record = Record(
            recordType: ShareDetails.recordType, recordName: "share-1", zoneID: zone,
            fields: [ShareDetails.titleField: .string("Holidays")])
        let guest = ShareParticipant(
            lookupInfo: .email("guest@example.com"), role: .user, acceptanceStatus: .pending, permission: .readOnly)
        let phone = ShareParticipant(
            participantID: "p2", lookupInfo: UserLookupInfo(phoneNumber: "+1 555"), role: .publicUser,
            acceptanceStatus: .removed, permission: .none)
        record.shareDetails = ShareDetails(
            shortGUID: "0abc", publicPermission: .readOnly, participants: [owner, guest, phone], owner: owner,
            currentUserParticipant: guest, url: "https://cumulus.example/share/0abc")
        return record
    }

    static func root() -> Record {
        var record = Record(recordType: "Album", recordName: "album-1", zoneID: zone, fields: ["name": .string("A")])
        record.share = "share-1"
        record.parent = "library"
        return record
    }

    static func decodeBoth(_ bytes: [UInt8]) throws -> (wire: Record, codable: Record) {
        (try WireFormat.decodeRecord(from: bytes), try JSONDecoder().decode(Record.self, from: Data(bytes)))
    }

    @Test("a parent is written after the zone as {recordName} and read back by the fast path")
    func parentInWriterForm() throws {
        let record = Self.photo()
        let bytes = try WireFormat.encode(record)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasSuffix(#""zoneID":{"zoneName":"Library"},"parent":{"recordName":"album-1"}}"#))
        let (wire, codable) = try Self.decodeBoth(bytes)
        #expect(wire == record)
        #expect(wire.parent == "album-1")
        #expect(codable == record)
        // Fields stay wire text: the record came through the fast path.
        #expect(wire.fields.wire != nil)
        #expect(try WireFormat.decodeRecord(from: WireFormat.encode(Self.photo(parent: nil))).parent == nil)
    }

    @Test("shares and share records round-trip through the writer, the reader and Codable")
    func shareRoundTrips() throws {
        for record in [Self.share(), Self.root()] {
            let bytes = try WireFormat.encode(record)
            let (wire, codable) = try Self.decodeBoth(bytes)
            #expect(wire == record)
            #expect(codable == record)
            let viaCodable = try JSONEncoder().encode(record)
            #expect(try WireFormat.decodeRecord(from: viaCodable) == record)
            let ours = try JSONSerialization.jsonObject(with: viaCodable) as? NSDictionary
            let theirs = try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary
            #expect(ours != nil && ours == theirs)
        }
        let text = String(decoding: try WireFormat.encode(Self.root()), as: UTF8.self)
        #expect(text.contains(#""share":{"recordName":"share-1","zoneID":{"zoneName":"Library"}}"#))
        let share = String(decoding: try WireFormat.encode(Self.share()), as: UTF8.self)
        #expect(share.contains(#""publicPermission":"READ_ONLY","participants":[{"participantId":"p0","#))
        #expect(
            share.contains(
                #"{"userIdentity":{"lookupInfo":{"emailAddress":"guest@example.com"}},"type":"USER","acceptanceStatus":"PENDING","permission":"READ_ONLY"}"#
            ))
    }

    @Test("the general reader takes a full reference as parent, any order, spacing and nulls")
    func generalForms() throws {
        let text = """
            { "parent" : {"zoneID": {"zoneName": "Library"}, "action": "NONE", "recordName": "album-9"},
              "recordType": "Photo", "share": {"recordName": "s"}, "zoneID": {"zoneName": "Library"},
              "recordName": "p", "fields": {}, "url": null }
            """
        let record = try WireFormat.decodeRecord(from: wireUTF8(text))
        #expect(record.parent == "album-9")
        #expect(record.share == "s")
        #expect(record.shareDetails == nil)
        let codable = try JSONDecoder().decode(Record.self, from: Data(text.utf8))
        #expect(codable.parent == "album-9" && codable.share == "s")
        let nullParent = #"{"recordName":"p","recordType":"Photo","fields":{},"parent":null}"#
        #expect(try WireFormat.decodeRecord(from: wireUTF8(nullParent)).parent == nil)
        // A share record with only some keys: the others take their defaults.
        let sparse = #"{"recordName":"s","recordType":"cloudkit.share","participants":[{"permission":"READ_WRITE"}]}"#
        let details = try #require(try WireFormat.decodeRecord(from: wireUTF8(sparse)).shareDetails)
        #expect(details.publicPermission == .none)
        #expect(details.participants == [ShareParticipant(permission: .readWrite)])
    }

    @Test("names are bytes: a composed and a decomposed parent stay distinct")
    func parentNamesAreBytes() throws {
        let composed = Self.photo(parent: "caf\u{E9}")
        let decomposed = Self.photo(parent: "cafe\u{301}")
        let a = try WireFormat.decodeRecord(from: WireFormat.encode(composed))
        let b = try WireFormat.decodeRecord(from: WireFormat.encode(decomposed))
        #expect(Array(try #require(a.parent).utf8) == Array("caf\u{E9}".utf8))
        #expect(Array(try #require(b.parent).utf8) == Array("cafe\u{301}".utf8))
        #expect(try WireFormat.encode(a) != WireFormat.encode(b))
    }

    @Test(
        "bad relations are typed errors",
        arguments: [
            (#""publicPermission":"EVERYONE""#, WireFormatError.Code.invalidValue, "unknown permission 'EVERYONE'"),
            (#""participants":[{"type":"GUEST","permission":"NONE"}]"#, .invalidValue, "participant type 'GUEST'"),
            (#""owner":{"acceptanceStatus":"MAYBE","permission":"NONE"}"#, .invalidValue, "status 'MAYBE'"),
            (#""owner":{"type":"OWNER"}"#, .missingKey, "no 'permission'"),
            (#""participants":{}"#, .wrongType, "participants"),
            (#""parent":"album""#, .wrongType, "parent"),
            (#""parent":{"zoneID":{"zoneName":"z"}}"#, .missingKey, "no 'recordName'"),
            (#""share":{"recordName":7}"#, .wrongType, "share"),
            (#""owner":{"permission":"NONE","userIdentity":{"lookupInfo":[]}}"#, .wrongType, "lookupInfo"),
            (#""url":false"#, .wrongType, "url"),
        ])
    func badRelations(member: String, code: WireFormatError.Code, message: String) throws {
        let text = #"{"recordName":"s","recordType":"cloudkit.share","fields":{},"# + member + "}"
        let error = try #require(wireError { try WireFormat.decodeRecord(from: wireUTF8(text)) })
        #expect(error.code == code)
        #expect(error.description.contains(message), "\(error)")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Record.self, from: Data(text.utf8)) }
    }

    @Test("damaged share records never crash the reader: every prefix and many byte flips")
    func damagedShareRecords() throws {
        var random = WireRandom(seed: 2024)
        for record in [Self.share(), Self.root(), Self.photo()] {
            let bytes = try WireFormat.encode(record)
            for end in 0..<bytes.count {
                #expect(wireError { try WireFormat.decodeRecord(from: Array(bytes[..<end])) } != nil)
            }
            for _ in 0..<400 {
                var damaged = bytes
                let index = Int.random(in: 0..<damaged.count, using: &random)
                damaged[index] = UInt8.random(in: 0...255, using: &random)
                if let read = try? WireFormat.decodeRecord(from: damaged) {
                    // Whatever was read writes and reads back the same.
                    #expect(try WireFormat.decodeRecord(from: WireFormat.encode(read)) == read)
                }
            }
        }
    }

    @Test("random relations round-trip through the writer and the reader")
    func randomRelations() throws {
        var random = WireRandom(seed: 97)
        for _ in 0..<200 {
            var record = WireSamples.record(&random)
            func maybe(_ random: inout WireRandom) -> String? {
                Bool.random(using: &random) ? WireSamples.string(&random) : nil
            }
            record.parent = maybe(&random)
            record.share = maybe(&random)
            if Bool.random(using: &random) {
                let participants = (0..<Int.random(in: 0..<4, using: &random)).map { _ in
                    ShareParticipant(
                        participantID: maybe(&random), userRecordName: maybe(&random),
                        lookupInfo: Bool.random(using: &random) ? UserLookupInfo(emailAddress: maybe(&random)) : nil,
                        nameComponents: Bool.random(using: &random)
                            ? UserNameComponents(givenName: maybe(&random)) : nil,
                        role: ShareParticipantRole.allCases.randomElement(using: &random)!,
                        acceptanceStatus: ShareAcceptanceStatus.allCases.randomElement(using: &random)!,
                        permission: SharePermission.allCases.randomElement(using: &random)!)
                }
                record.shareDetails = ShareDetails(
                    shortGUID: maybe(&random),
                    publicPermission: SharePermission.allCases.randomElement(using: &random)!,
                    participants: participants, owner: participants.first, url: maybe(&random))
            }
            let decoded = try WireFormat.decodeRecord(from: WireFormat.encode(record))
            #expect(wireIdentical(decoded, record))
            let codable = try JSONDecoder().decode(Record.self, from: JSONEncoder().encode(record))
            #expect(wireIdentical(codable, record))
        }
    }
}
