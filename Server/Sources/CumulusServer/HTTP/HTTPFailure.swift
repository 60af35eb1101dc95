import CloudCodable
import CloudProtocol
import Foundation
import HTTPTypes
import Hummingbird
import NIOHTTP1

/// A request answered with an error dictionary: a ``CloudError`` and the
/// status it goes out with, which is the code's own status except where
/// HTTP has a better one (413 for a body over the limit, 408 for a request
/// too slow to arrive).
struct HTTPFailure: Error {
    var error: CloudError
    var status: Int
    /// Whether the connection closes after the answer: what is left of the
    /// request cannot be read (a malformed body, one that stopped coming).
    var closesConnection: Bool
    /// Headers the answer carries besides its own (a 416's `Content-Range`).
    var headers: HTTPFields

    init(_ error: CloudError, status: Int? = nil, closesConnection: Bool = false, headers: HTTPFields = [:]) {
        self.error = error
        self.status = status ?? error.httpStatus
        self.closesConnection = closesConnection
        self.headers = headers
    }

    init(_ code: CloudError.Code, _ reason: String) {
        self.init(CloudError(code, reason: reason))
    }

    /// The answer: the error dictionary, with a `uuid` so that the client's
    /// report can be found in the server's log, and `Retry-After` when the
    /// error says when to retry.
    func response() -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        if let retryAfter = retryAfterSeconds { headers[.retryAfter] = retryAfter }
        if closesConnection { headers[.connection] = "close" }
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: identifiedError.encodedBody())))
    }

    /// The answer as HTTP/1 parts, for a connection handler answering below
    /// Hummingbird; it always closes the connection.
    func http1Parts() -> (head: HTTPResponseHead, body: ByteBuffer) {
        let body = ByteBuffer(bytes: identifiedError.encodedBody())
        var headers = HTTPHeaders([
            ("Content-Type", "application/json"), ("Content-Length", "\(body.readableBytes)"), ("Connection", "close"),
        ])
        if let retryAfter = retryAfterSeconds { headers.add(name: "Retry-After", value: retryAfter) }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
        return (head, body)
    }

    private var identifiedError: CloudError {
        var error = error
        if error.uuid == nil { error.uuid = UUID().uuidString }
        return error
    }

    /// `Retry-After` in whole seconds, rounded up.
    private var retryAfterSeconds: String? {
        guard let retryAfter = error.retryAfter else { return nil }
        let seconds = retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0)
        return String(max(0, seconds))
    }
}
