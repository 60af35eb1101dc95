import CloudCodable
import Foundation

// PLACEHOLDER: the wire helper replaces every body in this file.

extension CloudRequest {
    /// The request's JSON body, or `nil` for the `GET` operations.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a value JSON cannot hold.
    public func encodedBody() throws -> [UInt8]? {
        fatalError("CloudRequest.encodedBody: not written yet")
    }

    /// Reads the body of a request for `operation`, as the server does.
    ///
    /// - Parameter fieldTypes: The types of fields sent without `type`.
    /// - Throws: ``CloudError`` (`BAD_REQUEST`, with a reason that says what
    ///   and where) for a body that is not a valid request.
    public static func decode(_ operation: CloudOperation, body: [UInt8], fieldTypes: FieldTypeLookup? = nil)
        throws -> CloudRequest
    {
        fatalError("CloudRequest.decode: not written yet")
    }
}

extension CloudResponse {
    /// The answer's JSON body.
    public func encodedBody() throws -> [UInt8] {
        fatalError("CloudResponse.encodedBody: not written yet")
    }

    /// Reads a successful answer to `operation`, as the client does.
    ///
    /// - Throws: ``CloudError`` for a body that is not a valid answer.
    public static func decode(_ operation: CloudOperation, body: [UInt8]) throws -> CloudResponse {
        fatalError("CloudResponse.decode: not written yet")
    }
}

extension NotificationBatch {
    /// The batch's JSON body.
    public func encodedBody() -> [UInt8] {
        fatalError("NotificationBatch.encodedBody: not written yet")
    }

    /// Reads a batch.
    ///
    /// - Throws: ``CloudError`` for a body that is not a valid batch.
    public static func decode(body: [UInt8]) throws -> NotificationBatch {
        fatalError("NotificationBatch.decode: not written yet")
    }
}

extension CloudError {
    /// The error dictionary of a request that failed as a whole:
    /// `{uuid, serverErrorCode, reason, retryAfter?}`.
    public func encodedBody() -> [UInt8] {
        fatalError("CloudError.encodedBody: not written yet")
    }

    /// The error an answer with a status other than 2xx stands for: its error
    /// dictionary when the body is one, else a typed error that says what
    /// came back (for example a proxy's HTML page).
    public static func decode(httpStatus: Int, body: [UInt8], contentType: String?) -> CloudError {
        fatalError("CloudError.decode: not written yet")
    }
}
