import Cumulus
import Foundation
import Testing

@Suite("The wire form of sharing's and user lookup's requests and answers")
struct WireSharingTests {
    typealias F = WireFixtures

    static let requests: [CloudRequest] = [
        .resolveShares([
            ShareLookup(shortGUID: "g-1"),
            ShareLookup(shortGUID: "ü \"g\"", fetchRootRecord: true, rootRecordDesiredKeys: ["title", "count"]),
            ShareLookup(shortGUID: "g-3", rootRecordDesiredKeys: []),
        ]),
        .resolveShares([]),
        .acceptShares([ShareLookup(shortGUID: "g-2", fetchRootRecord: true)]),
        .acceptShares([]),
        .lookupUsersByEmail(["bob@example.com", "ünï@example.com"]),
        .lookupUsersByEmail([]),
        .lookupUsersByID(["_bob", "_carol"]),
        .lookupUsersByID([]),
        .discoverUsers([
            .email("bob@example.com"), UserLookupInfo(phoneNumber: "+1 555 0100"), .user("_carol"),
            UserLookupInfo(emailAddress: "d@example.com", phoneNumber: "1", userRecordName: "_d"),
        ]),
        .discoverUsers([]),
    ]

    @Test("every request reads back as it was written", arguments: requests)
    func requestRoundTrip(_ request: CloudRequest) throws {
        let body = try #require(try request.encodedBody())
        #expect(try CloudRequest.decode(request.operation, body: body) == request)
    }

    @Test("requests are spelled as the reference spells them")
    func requestSpelling() throws {
        func body(_ request: CloudRequest) throws -> String {
            String(decoding: try #require(try request.encodedBody()), as: UTF8.self)
        }
        #expect(
            try body(
                .resolveShares([
                    ShareLookup(shortGUID: "a"),
                    ShareLookup(shortGUID: "b", fetchRootRecord: true, rootRecordDesiredKeys: ["t"]),
                ]))
                == #"{"shortGUIDs":[{"value":"a"},{"value":"b","shouldFetchRootRecord":true,"rootRecordDesiredKeys":["t"]}]}"#
        )
        #expect(try body(.acceptShares([ShareLookup(shortGUID: "a")])) == #"{"shortGUIDs":[{"value":"a"}]}"#)
        #expect(
            try body(.lookupUsersByEmail(["a@x", "b@x"]))
                == #"{"users":[{"emailAddress":"a@x"},{"emailAddress":"b@x"}]}"#)
        #expect(try body(.lookupUsersByID(["_a"])) == #"{"users":[{"userRecordName":"_a"}]}"#)
        #expect(
            try body(.discoverUsers([.email("a@x"), UserLookupInfo(phoneNumber: "1"), .user("_c")]))
                == #"{"lookupInfos":[{"emailAddress":"a@x"},{"phoneNumber":"1"},{"userRecordName":"_c"}]}"#)
    }

    @Test("requests in another client's shape: other key order, unknown keys, nulls")
    func requestsInOtherShapes() throws {
        let shares = #"""
            {"extra": [1], "shortGUIDs": [
              {"rootRecordDesiredKeys": null, "shouldFetchRootRecord": null, "value": "a", "x": {}},
              {"shouldFetchRootRecord": false, "value": "b"},
              {"rootRecordDesiredKeys": ["t"], "value": "c", "shouldFetchRootRecord": true}
            ]}
            """#
        #expect(
            try CloudRequest.decode(.acceptShares, body: utf8(shares))
                == .acceptShares([
                    ShareLookup(shortGUID: "a"), ShareLookup(shortGUID: "b"),
                    ShareLookup(shortGUID: "c", fetchRootRecord: true, rootRecordDesiredKeys: ["t"]),
                ]))
        let users = #"{"users":[{"emailAddress":"a@x","userRecordName":"_ignored"}],"zoneID":{"zoneName":"Z"}}"#
        #expect(try CloudRequest.decode(.lookupUsersByEmail, body: utf8(users)) == .lookupUsersByEmail(["a@x"]))
        let infos = #"{"lookupInfos":[{"phoneNumber":null,"emailAddress":"a@x","note":1}]}"#
        #expect(try CloudRequest.decode(.discoverUsers, body: utf8(infos)) == .discoverUsers([.email("a@x")]))
    }

    /// Bodies that are not valid requests, with a word the reason must hold.
    static let badBodies: [(CloudOperation, String, String)] = [
        (.resolveShares, "", "end of input"),
        (.resolveShares, "{}", "shortGUIDs"),
        (.resolveShares, #"{"shortGUIDs":{"value":"a"}}"#, "array"),
        (.resolveShares, #"{"shortGUIDs":[{"shouldFetchRootRecord":true}]}"#, "value"),
        (.resolveShares, #"{"shortGUIDs":["a"]}"#, "object"),
        (.acceptShares, #"{"shortGUIDs":[{"value":7}]}"#, "value"),
        (.acceptShares, #"{"shortGUIDs":[{"value":"a","shouldFetchRootRecord":"yes"}]}"#, "boolean"),
        (.acceptShares, #"{"shortGUIDs":[{"value":"a","rootRecordDesiredKeys":"title"}]}"#, "array"),
        (.lookupUsersByEmail, "{}", "users"),
        (.lookupUsersByEmail, #"{"users":[{"userRecordName":"_a"}]}"#, "emailAddress"),
        (.lookupUsersByEmail, #"{"users":["a@x"]}"#, "object"),
        (.lookupUsersByID, #"{"users":[{"emailAddress":"a@x"}]}"#, "userRecordName"),
        (.lookupUsersByID, #"{"users":[{"userRecordName":null}]}"#, "userRecordName"),
        (.discoverUsers, #"{"users":[{"emailAddress":"a@x"}]}"#, "lookupInfos"),
        (.discoverUsers, #"{"lookupInfos":[{}]}"#, "none of emailAddress, phoneNumber and userRecordName"),
        (.discoverUsers, #"{"lookupInfos":[{"emailAddress":null}]}"#, "none of"),
        (.discoverUsers, #"{"lookupInfos":[{"emailAddress":1}]}"#, "emailAddress"),
    ]

    @Test("a body that is not a valid request is BAD_REQUEST saying what", arguments: badBodies.indices)
    func badRequest(_ index: Int) {
        let (operation, body, word) = Self.badBodies[index]
        let error = cloudError { try CloudRequest.decode(operation, body: utf8(body)) }
        #expect(error?.code == .badRequest)
        #expect(error?.reason.contains(word) == true, "\(error?.reason ?? "")")
        #expect(error?.reason.contains(operation.rawValue) == true)
    }

    // MARK: - Answers

    static let owner = UserIdentity(
        userRecordName: "_owner1", lookupInfo: .email("owner@example.com"),
        nameComponents: UserNameComponents(givenName: "Ödön", familyName: "\"Ow\" ner"))

    /// A share record of `zone`.
    static func shareRecord(zone: ZoneID = F.zone) -> Record {
        var record = Record(recordType: "cloudkit.share", recordName: "cloudkit.zoneshare", zoneID: zone)
        record["cloudkit.title"] = .string("Shopping")
        record.metadata = RecordMetadata(changeTag: "s1", zoneID: zone)
        return record
    }

    static let answers: [(CloudOperation, CloudResponse)] = [
        (
            .resolveShares,
            .shares([
                .share(
                    ShareMetadata(
                        shortGUID: "g-1", containerIdentifier: "iCloud.com.example.notes", environment: .production,
                        zoneID: F.zone, share: shareRecord(), rootRecord: F.fullRecord(), ownerIdentity: owner,
                        participantRole: .user, participantStatus: .pending, participantPermission: .readOnly)),
                .failure(shortGUID: "g-2", CloudError(.notFound, reason: "no such share")),
                .failure(
                    shortGUID: "ü",
                    CloudError(.throttled, reason: "", retryAfter: .seconds(2), zoneID: F.otherZone, uuid: "u1")),
            ])
        ),
        (.resolveShares, .shares([])),
        (
            .acceptShares,
            .shares([
                .share(
                    ShareMetadata(
                        shortGUID: "g-3", containerIdentifier: "c", environment: .development,
                        zoneID: F.otherZone, share: shareRecord(zone: F.otherZone),
                        ownerIdentity: UserIdentity(userRecordName: "_o"), participantRole: .publicUser,
                        participantStatus: .accepted, participantPermission: .readWrite)),
                .share(
                    ShareMetadata(
                        shortGUID: "g-4", containerIdentifier: "c", environment: .development, databaseScope: .private,
                        zoneID: .defaultZone, share: shareRecord(zone: .defaultZone),
                        ownerIdentity: UserIdentity(userRecordName: "_o"), participantRole: .administrator,
                        participantStatus: .removed, participantPermission: .none)),
            ])
        ),
        (
            .lookupUsersByEmail,
            .users([
                UserIdentity(
                    userRecordName: "_b", lookupInfo: .email("b@example.com"),
                    nameComponents: UserNameComponents(givenName: "B")),
                UserIdentity(userRecordName: "_c"),
            ])
        ),
        (.lookupUsersByID, .users([])),
        (
            .discoverUsers,
            .users([
                UserIdentity(
                    userRecordName: "_d", lookupInfo: UserLookupInfo(phoneNumber: "1", userRecordName: "_d"),
                    nameComponents: UserNameComponents(familyName: "D")),
                UserIdentity(userRecordName: "_e", lookupInfo: UserLookupInfo(), nameComponents: UserNameComponents()),
            ])
        ),
        (.currentUser, .user(owner)),
        (.currentUser, .user(UserIdentity(userRecordName: "_me", nameComponents: UserNameComponents(givenName: "M")))),
    ]

    @Test("every answer reads back as it was written", arguments: answers.indices)
    func answerRoundTrip(_ index: Int) throws {
        let (operation, answer) = Self.answers[index]
        #expect(try CloudResponse.decode(operation, body: try answer.encodedBody()) == answer)
    }

    @Test("answers are spelled as the reference spells them")
    func answerSpelling() throws {
        let body = try Self.answers[0].1.encodedBody()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(Set(json.keys) == ["results"])
        let results = try #require(json["results"] as? [[String: Any]])
        let share = results[0]
        #expect(
            Set(share.keys) == [
                "shortGUID", "containerIdentifier", "environment", "databaseScope", "zoneID", "share", "rootRecord",
                "ownerIdentity", "participantType", "participantStatus", "participantPermission",
            ])
        #expect(share["databaseScope"] as? String == "SHARED")
        #expect(share["environment"] as? String == "production")
        #expect(share["participantType"] as? String == "USER")
        #expect(share["participantStatus"] as? String == "PENDING")
        #expect(share["participantPermission"] as? String == "READ_ONLY")
        let owner = try #require(share["ownerIdentity"] as? [String: Any])
        #expect(owner["userRecordName"] as? String == "_owner1")
        #expect(owner["lookupInfo"] as? [String: String] == ["emailAddress": "owner@example.com"])
        #expect(owner["nameComponents"] as? [String: String] == ["givenName": "Ödön", "familyName": "\"Ow\" ner"])
        #expect(results[1]["shortGUID"] as? String == "g-2")
        #expect(results[1]["serverErrorCode"] as? String == "NOT_FOUND")
        let users = try CloudResponse.users([UserIdentity(userRecordName: "_c")]).encodedBody()
        #expect(String(decoding: users, as: UTF8.self) == #"{"users":[{"userRecordName":"_c"}]}"#)
    }

    /// A share item as another server could write it: records without
    /// zones, other key order, unknown keys.
    static let otherShareItem = #"""
        {"participantPermission": "READ_WRITE", "share": {"recordName": "s", "recordType": "cloudkit.share"},
         "ownerIdentity": {"nameComponents": null, "userRecordName": "_o", "lookupInfo": {"emailAddress": null}},
         "zoneID": {"zoneName": "Z", "ownerRecordName": "_o"}, "participantStatus": "ACCEPTED",
         "rootRecord": {"recordName": "r", "recordType": "List", "fields": {"t": {"value": "x"}}},
         "participantType": "OWNER", "databaseScope": "SHARED", "environment": "development",
         "containerIdentifier": "c", "shortGUID": "g", "potentialMatches": [], "anonymousPublicAccess": {}}
        """#

    @Test("a share item in another server's shape: its records take the item's zone")
    func shareItemInOtherShape() throws {
        let answer = try CloudResponse.decode(.resolveShares, body: utf8(#"{"results":["# + Self.otherShareItem + "]}"))
        guard case .shares(let results) = answer, case .share(let metadata) = results.first else {
            Issue.record("expected a share: \(answer)")
            return
        }
        let zone = ZoneID(zoneName: "Z", ownerRecordName: "_o")
        #expect(metadata.zoneID == zone)
        #expect(metadata.share.zoneID == zone)
        #expect(metadata.rootRecord?.zoneID == zone)
        #expect(metadata.rootRecord?["t"] == .string("x"))
        #expect(metadata.ownerIdentity == UserIdentity(userRecordName: "_o", lookupInfo: UserLookupInfo()))
        #expect(metadata.participantRole == .owner)
        #expect(metadata.environment == .development)
        let failure = try CloudResponse.decode(
            .acceptShares, body: utf8(#"{"results":[{"reason":"gone","shortGUID":"g","serverErrorCode":"NOT_FOUND"}]}"#)
        )
        #expect(failure == .shares([.failure(shortGUID: "g", CloudError(.notFound, reason: "gone"))]))
    }

    /// Answers that are not valid, for the operation asked.
    static let badAnswers: [(CloudOperation, String)] = [
        (.resolveShares, "{}"),
        (.resolveShares, #"{"records":[]}"#),
        (.resolveShares, #"{"results":{}}"#),
        (.resolveShares, #"{"results":[{"serverErrorCode":"NOT_FOUND","reason":"x"}]}"#),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""SHARED""#, with: #""OTHER""#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""OWNER""#, with: #""GUEST""#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""ACCEPTED""#, with: #""INVITED""#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""READ_WRITE""#, with: #""ALL""#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""development""#, with: #""staging""#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""share":"#, with: #""x":"#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""ownerIdentity":"#, with: #""x":"#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""zoneID":"#, with: #""x":"#) + "]}"
        ),
        (
            .acceptShares,
            #"{"results":["# + otherShareItem.replacingOccurrences(of: #""userRecordName": "_o""#, with: #""u": 1"#)
                + "]}"
        ),
        (.lookupUsersByEmail, "{}"),
        (.lookupUsersByEmail, #"{"users":[{"lookupInfo":{"emailAddress":"a@x"}}]}"#),
        (.lookupUsersByID, #"{"users":[{"userRecordName":"_a","nameComponents":"Bob"}]}"#),
        (.discoverUsers, #"{"users":{}}"#),
        (.currentUser, #"{"userRecordName":"_a","lookupInfo":[]}"#),
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
        for count in stride(from: 0, to: body.count, by: 3) {
            #expect(cloudError { try CloudResponse.decode(.resolveShares, body: Array(body.prefix(count))) } != nil)
        }
    }
}
