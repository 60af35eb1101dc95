import CloudCodable
import Foundation

extension CloudError {
    /// The error an answer with a status other than 2xx stands for: its error
    /// dictionary when the body is one, else a typed error that says what
    /// came back (for example a proxy's HTML page).
    ///
    /// The typed error's code follows the status (401 `AUTHENTICATION_FAILED`,
    /// 403 `ACCESS_DENIED`, 404 `NOT_FOUND`, 410 `EXPIRED`, 413
    /// `BAD_REQUEST`, 416 `RANGE_NOT_SATISFIABLE`, 421
    /// `AUTHENTICATION_REQUIRED`, 429 `THROTTLED`, 502, 503 and 504
    /// `TRY_AGAIN_LATER`, other 5xx `INTERNAL_ERROR`, other 4xx
    /// `BAD_REQUEST`); its reason never quotes the body, which might echo
    /// secrets.
    public static func decode(httpStatus: Int, body: [UInt8], contentType: String?) -> CloudError {
        if let error = try? WireBodyReader.read(
            body,
            { reader -> CloudError in
                let error = try WireErrorMembers.readError(&reader, "the error dictionary")
                try reader.expectEnd()
                return error
            })
        {
            return error
        }
        return statusError(httpStatus, contentType: contentType)
    }

    /// The typed error for a status whose body is not an error dictionary.
    private static func statusError(_ status: Int, contentType: String?) -> CloudError {
        let code: Code
        var what: String?
        switch status {
        case 401: code = .authenticationFailed
        case 403: code = .accessDenied
        case 404: code = .notFound
        case 413:
            code = .badRequest
            what = "the request is too large for the server"
        case 410: code = .expired
        case 416: code = .rangeNotSatisfiable
        case 421: code = .authenticationRequired
        case 429: code = .throttled
        case 502, 503, 504: code = .tryAgainLater
        case 400..<500: code = .badRequest
        default: code = .internalError
        }
        // The content type is the server's text too: keep it short and printable.
        let type = contentType.map { text in
            String(String.UnicodeScalarView(text.unicodeScalars.prefix(80).filter { $0.isASCII && $0.value >= 0x20 }))
        }
        let body = type.map { "a body of type '\($0)'" } ?? "a body without a content type"
        var reason = "HTTP status \(status) with \(body) that is not a CloudKit error dictionary"
        if let what { reason = "\(what) (\(reason))" }
        return CloudError(code, reason: reason)
    }
}
