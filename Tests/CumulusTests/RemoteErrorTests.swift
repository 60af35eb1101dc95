import CloudCodable
import Foundation
import Testing

@testable import Cumulus

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("RemoteCloudDatabase errors")
struct RemoteErrorTests {
    /// The error `listZones` throws when the transport does `answer`.
    private func failure(
        credentials: RemoteCloudDatabase.Credentials = .user(
            apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.webAuthToken),
        _ answer: @escaping @Sendable (CloudHTTPRequest) throws -> CloudHTTPResponse
    ) async throws -> CloudError {
        let database = RemoteFixture.database(RecordingTransport(handler: answer), credentials: credentials)
        return try await #require(throws: CloudError.self) { _ = try await database.listZones() }
    }

    private static func html(_ status: Int) -> CloudHTTPResponse {
        CloudHTTPResponse(
            status: status, headers: ["Content-Type": "text/html"],
            body: Array("<html><body><h1>\(status)</h1></body></html>".utf8))
    }

    @Test("an error dictionary becomes its error")
    func dictionary() async throws {
        let sent = CloudError(.zoneNotFound, reason: "no zone Notes", uuid: "u-1")
        let error = try await failure { _ in
            CloudHTTPResponse(status: 404, headers: ["Content-Type": "application/json"], body: sent.encodedBody())
        }
        #expect(error.code == .zoneNotFound)
        #expect(error.reason == "no zone Notes")
        #expect(error.uuid == "u-1")
    }

    @Test("a proxy's HTML 502 is TRY_AGAIN_LATER, a transient error")
    func proxyPage() async throws {
        let error = try await failure { _ in Self.html(502) }
        #expect(error.code == .tryAgainLater)
        #expect(error.isTransient)
    }

    @Test("a 413 without a dictionary is BAD_REQUEST, so the engine halves its batch")
    func tooLarge() async throws {
        let error = try await failure { _ in Self.html(413) }
        #expect(error.code == .badRequest)
    }

    @Test("a 429's Retry-After header fills in the delay the dictionary does not give")
    func retryAfterHeader() async throws {
        let throttled = CloudError(.throttled, reason: "slow down")
        let error = try await failure { _ in
            CloudHTTPResponse(
                status: 429, headers: ["content-type": "application/json", "retry-after": "7"],
                body: throttled.encodedBody())
        }
        #expect(error.code == .throttled)
        #expect(error.retryAfter == .seconds(7))

        let withDelay = CloudError(.throttled, reason: "slow down", retryAfter: .seconds(3))
        let kept = try await failure { _ in
            CloudHTTPResponse(
                status: 429, headers: ["Content-Type": "application/json", "Retry-After": "7"],
                body: withDelay.encodedBody())
        }
        #expect(kept.retryAfter == .seconds(3))

        let bare = try await failure { _ in CloudHTTPResponse(status: 503, headers: ["Retry-After": "2"]) }
        #expect(bare.retryAfter == .seconds(2))
    }

    @Test("Retry-After as an HTTP date counts from now")
    func retryAfterDate() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        #expect(RemoteSession.retryAfter("Tue, 14 Nov 2023 22:13:50 GMT", now: now) == .seconds(30))
        #expect(RemoteSession.retryAfter("Tue, 14 Nov 2023 22:00:00 GMT", now: now) == .zero)
        #expect(RemoteSession.retryAfter("soon", now: now) == nil)
        #expect(RemoteSession.retryAfter("-3", now: now) == nil)
    }

    @Test("a 2xx body that does not decode is the codec's error")
    func undecodable() async throws {
        let error = try await failure { _ in CloudHTTPResponse(status: 200, body: Array("{\"zones\": 7".utf8)) }
        #expect(error.code != .networkFailure)
    }

    @Test("a timeout, a lost connection or any transport failure is a transient network failure")
    func networkFailures() async throws {
        for code in [URLError.Code.timedOut, .networkConnectionLost, .cannotConnectToHost] {
            let error = try await failure { request in
                throw URLError(code, userInfo: [NSURLErrorFailingURLErrorKey: request.url])
            }
            #expect(error.code == .networkFailure)
            #expect(error.isTransient)
        }
        struct Broken: Error {}
        let other = try await failure { _ in throw Broken() }
        #expect(other.code == .networkFailure)
    }

    @Test("no token appears in any error or description, however a request fails")
    func noTokenLeaks() async throws {
        let tokens = [RemoteFixture.apiToken, RemoteFixture.webAuthToken]
        let user = RemoteCloudDatabase.Credentials.user(
            apiToken: RemoteFixture.apiToken, webAuthToken: RemoteFixture.webAuthToken)
        struct Leaky: Error, CustomStringConvertible {
            var url: URL
            var description: String { "failed \(url)" }
        }
        var texts: [String] = []
        let answers: [@Sendable (CloudHTTPRequest) throws -> CloudHTTPResponse] = [
            { _ in CloudHTTPResponse(status: 401, body: CloudError(.authenticationFailed, reason: "who?").encodedBody())
            },
            { _ in Self.html(502) },
            { _ in Self.html(413) },
            { _ in CloudHTTPResponse(status: 429, headers: ["Retry-After": "1"]) },
            { _ in CloudHTTPResponse(status: 200, body: Array("nonsense".utf8)) },
            { request in throw URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: request.url]) },
            { request in throw Leaky(url: request.url) },
        ]
        for answer in answers {
            let error = try await failure(credentials: user, answer)
            texts += [String(describing: error), String(reflecting: error), error.reason, error.localizedDescription]
        }
        let refused = RemoteCloudDatabase(
            configuration: .init(baseURL: URL(string: "http://127.0.0.1:\(try closedPort())")!, container: "c"),
            credentials: user, transport: URLSessionTransport())
        let error = try await #require(throws: CloudError.self) { _ = try await refused.listZones() }
        texts += [String(describing: error), String(reflecting: error), error.localizedDescription]

        var dumped = ""
        dump(user, to: &dumped)
        texts += [String(describing: user), String(reflecting: user), dumped]
        let transport = RecordingTransport(answering: .zones([]))
        _ = try await RemoteFixture.database(transport).listZones()
        let request = try #require(transport.requests.first)
        texts += [String(describing: request), String(reflecting: request)]
        for text in texts {
            for token in tokens {
                #expect(!text.contains(token), "\(text)")
                #expect(!text.contains(RemoteSession.percentEncoded(token)), "\(text)")
            }
        }
        #expect(String(describing: user) == "user(apiToken: <redacted>, webAuthToken: <redacted>)")
        let server = RemoteCloudDatabase.Credentials.serverKey(apiToken: "secret", signer: EchoSigner())
        #expect(String(describing: server) == "serverKey(apiToken: <redacted>, keyID: key-1)")
    }
}
