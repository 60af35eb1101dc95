import Cumulus
import Foundation
import Testing

@Suite("The wire form of errors and notifications")
struct WireErrorTests {
    @Test("a request's error dictionary reads back as it was written")
    func roundTrip() {
        let errors = [
            CloudError(.throttled, reason: "slow", retryAfter: .seconds(2), uuid: "u1"),
            CloudError(.tryAgainLater, reason: "busy ✓", retryAfter: .milliseconds(250)),
            CloudError(.badRequest, reason: "bad"),
            WireFixtures.conflict(),
            CloudError(CloudError.Code(rawValue: "SOMETHING_NEW"), reason: "from a newer server"),
        ]
        for error in errors {
            #expect(
                CloudError.decode(
                    httpStatus: error.httpStatus, body: error.encodedBody(), contentType: "application/json") == error)
        }
    }

    @Test("a hand-written error dictionary with keys in another order and unknown keys")
    func cloudKitShape() {
        let body = #"{"reason":"wait","redirectURL":null,"retryAfter":"3","serverErrorCode":"THROTTLED","uuid":"x"}"#
        let error = CloudError.decode(httpStatus: 429, body: utf8(body), contentType: nil)
        #expect(error == CloudError(.throttled, reason: "wait", retryAfter: .seconds(3), uuid: "x"))
    }

    @Test(
        "a body that is not an error dictionary gives a typed error by status",
        arguments: [
            (401, "AUTHENTICATION_FAILED"), (403, "ACCESS_DENIED"), (404, "NOT_FOUND"), (413, "BAD_REQUEST"),
            (421, "AUTHENTICATION_REQUIRED"), (429, "THROTTLED"), (502, "TRY_AGAIN_LATER"), (503, "TRY_AGAIN_LATER"),
            (504, "TRY_AGAIN_LATER"), (500, "INTERNAL_ERROR"), (507, "INTERNAL_ERROR"), (400, "BAD_REQUEST"),
            (418, "BAD_REQUEST"),
        ])
    func byStatus(_ status: Int, _ code: String) {
        let secret = "<html>token=SECRET-123</html>"
        let error = CloudError.decode(httpStatus: status, body: utf8(secret), contentType: "text/html")
        #expect(error.code.rawValue == code)
        #expect(error.reason.contains("\(status)"))
        #expect(error.reason.contains("text/html"))
        #expect(error.reason.contains("not a CloudKit error dictionary"))
        #expect(!error.reason.contains("SECRET"))
        if status == 413 {
            #expect(error.reason.contains("the request is too large for the server"))
        }
    }

    @Test("JSON that is not an error dictionary, and an empty body, go by status too")
    func otherJSON() {
        for body in [#"{"message":"nope"}"#, "", #"{"serverErrorCode":5}"#, "[1]"] {
            let error = CloudError.decode(httpStatus: 503, body: utf8(body), contentType: "application/json")
            #expect(error.code == .tryAgainLater)
            #expect(error.reason.contains("application/json"))
        }
        #expect(
            CloudError.decode(httpStatus: 404, body: [], contentType: nil).reason.contains("without a content type"))
    }

    @Test("a notification batch reads back as it was written")
    func batchRoundTrip() throws {
        let batch = NotificationBatch(
            notifications: [
                .zoneChanged(WireFixtures.zone, subscriptionID: "s1"), .zoneChanged(.defaultZone, subscriptionID: nil),
                .databaseChanged, .accountChanged,
                .queryChanged(
                    QueryNotification(
                        subscriptionID: "q", recordName: "r-ü", zoneID: .defaultZone, reason: .created)),
                .queryChanged(
                    QueryNotification(
                        subscriptionID: "q", recordName: "r", zoneID: WireFixtures.zone, reason: .deleted)),
            ], cursor: "c-42")
        #expect(try NotificationBatch.decode(body: batch.encodedBody()) == batch)
        let empty = NotificationBatch(notifications: [], cursor: "")
        #expect(try NotificationBatch.decode(body: empty.encodedBody()) == empty)
    }

    @Test("a batch skips notifications of unknown types; a broken batch is an error")
    func batchShapes() throws {
        let body = #"{"cursor":"c","notifications":[{"type":"future"},{"zoneID":{"zoneName":"Z"},"type":"zone"}]}"#
        #expect(
            try NotificationBatch.decode(body: utf8(body))
                == NotificationBatch(
                    notifications: [.zoneChanged(ZoneID(zoneName: "Z"), subscriptionID: nil)], cursor: "c"))
        for bad in [
            "", #"{"notifications":[]}"#, #"{"cursor":"c","notifications":[{"type":"zone"}]}"#,
            #"{"cursor":"c","notifications":[{}]}"#,
            #"{"cursor":"c","notifications":[{"type":"query","subscriptionID":"q","zoneID":{"zoneName":"Z"},"recordName":"r"}]}"#,
            #"{"cursor":"c","notifications":[{"type":"query","subscriptionID":"q","zoneID":{"zoneName":"Z"},"recordName":"r","reason":"moved"}]}"#,
        ] {
            let error = cloudError { try NotificationBatch.decode(body: utf8(bad)) }
            #expect(error?.code == .internalError)
        }
    }
}
