import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Testing

/// The attack of issue 33 §1 over HTTP: identity users sign in with tokens
/// that claim a provisioned victim's address as verified, to be found in
/// the victim's place and to accept the victim's invitation.
@Suite("HTTP address ownership")
struct HTTPAddressOwnershipTests {
    static let zone = ZoneID(zoneName: "Albums")

    /// Alice's share of an album, inviting `address`; its shortGUID.
    static func share(inviting address: String, on server: HTTPTestServer) async throws -> String {
        let alice = RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(
                baseURL: server.baseURL, container: server.container, scope: .private),
            credentials: .user(apiToken: server.apiToken, webAuthToken: server.webAuthToken))
        _ = try await alice.modifyZones([.create(zone)])
        var root = Record(recordType: "Album", recordName: "a1", zoneID: zone)
        root.share = "share-a1"
        var share = Record(recordType: ShareDetails.recordType, recordName: "share-a1", zoneID: zone)
        share.shareDetails = ShareDetails(
            publicPermission: .none,
            participants: [ShareParticipant(lookupInfo: .email(address), permission: .readOnly)])
        let saved = try await alice.modifyRecords(
            [RecordOperation(.create, share), RecordOperation(.create, root)], zoneID: zone, atomic: true)
        return try #require(saved.first?.record?.shareDetails?.shortGUID)
    }

    @Test(
        "identity users claiming a victim's verified address neither are found as the victim nor accept for them",
        arguments: TestStore.single)
    func claimsOfAVictimsAddress(_ store: TestStore) async throws {
        try await HTTPIdentityTokenTests.withIssuer(store: store) { server, service in
            let vic = try await service.addUser(
                named: "vic", container: server.container, emailAddress: "vic@example.com")
            let guid = try await Self.share(inviting: "vic@example.com", on: server)
            // Twelve subjects claim the address: with random record names, some sort after vic's.
            var claimers: [String: String] = [:]
            for index in 0..<12 {
                let token = try await HTTPIdentityTokenTests.rsa.sign(
                    TestClaims(sub: "mallory-\(index)", email: "VIC@example.com", emailVerified: .bool(true)))
                let name = try #require(HTTPTestServer.userRecordName(try await server.sendBearer(token)))
                claimers[name] = token
                #expect(
                    try await HTTPIdentityTokenTests.usersFound(server, email: "vic@example.com") == [
                        vic.userRecordName
                    ])
            }
            let discover = try await server.sendAsUser(
                "users/discover", body: #"{"lookupInfos":[{"emailAddress":"vic@example.com"}]}"#, scope: "public")
            let found = (discover.json["users"] as? [[String: Any]])?.compactMap { $0["userRecordName"] as? String }
            #expect(found == [vic.userRecordName])

            let accept = #"{"shortGUIDs":[{"value":"\#(guid)"}]}"#
            for token in claimers.values {
                let refused = try await server.send(
                    "POST", server.path("records/accept", scope: "public"), query: ["ckAPIToken": server.apiToken],
                    body: Array(accept.utf8), headers: ["Authorization": "Bearer \(token)"])
                let entry = (refused.json["results"] as? [[String: Any]])?.first
                #expect(entry?["serverErrorCode"] as? String == "ACCESS_DENIED", "\(refused.json)")
            }
            let accepted = try await server.send(
                "POST", server.path("records/accept", scope: "public"),
                query: ["ckAPIToken": server.apiToken, "ckWebAuthToken": vic.webAuthToken], body: Array(accept.utf8))
            let entry = (accepted.json["results"] as? [[String: Any]])?.first
            #expect(
                entry?["serverErrorCode"] == nil && entry?["participantStatus"] as? String == "ACCEPTED",
                "\(accepted.json)")
        }
    }
}
