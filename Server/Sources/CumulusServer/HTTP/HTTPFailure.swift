import Cumulus
import Foundation
import HTTPTypes
import Hummingbird

/// A request answered with an error dictionary: a ``CloudError`` and the
/// status it goes out with, which is the code's own status except where
/// HTTP has a better one (413 for a body over the limit).
struct HTTPFailure: Error {
    var error: CloudError
    var status: Int

    init(_ error: CloudError, status: Int? = nil) {
        self.error = error
        self.status = status ?? error.httpStatus
    }

    init(_ code: CloudError.Code, _ reason: String) {
        self.init(CloudError(code, reason: reason))
    }

    /// The answer: the error dictionary, with a `uuid` so that the client's
    /// report can be found in the server's log, and `Retry-After` when the
    /// error says when to retry.
    func response() -> Response {
        var error = error
        if error.uuid == nil { error.uuid = UUID().uuidString }
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = error.retryAfter {
            let seconds = retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0)
            headers[.retryAfter] = String(max(0, seconds))
        }
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: error.encodedBody())))
    }
}
