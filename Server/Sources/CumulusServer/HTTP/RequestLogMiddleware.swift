import Cumulus
import Foundation
import Hummingbird
import Logging
import NIOHTTP1

/// The outermost layer: refuses paths with an empty segment, turns every
/// failure into an error dictionary and logs one line per request.
///
/// The line holds the method, the path without its query (where the tokens
/// are), the status and the duration, and for a failure the error's
/// `serverErrorCode` and the `uuid` its answer gives the client. A path
/// never shows a token: the parameters a route marks secret
/// (``CloudRoutes/secretParameters``) are
/// logged as `…`, and so is, on a path no route takes, every segment after
/// `notifications` and every segment shaped like a token.
struct RequestLogMiddleware<Context: Hummingbird.RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let start = ContinuousClock.now
        let oddPath = Self.hasEmptySegment(request.uri.path)
        var response: Response
        var failure: HTTPFailure?
        do {
            // The router skips empty segments; refusing them keeps one spelling per path.
            guard !oddPath else { throw HTTPFailure(.notFound, "No such path: a path has no empty segment.") }
            response = try await next(request, context)
        } catch {
            // The uuid goes into the answer and the log line, so that a client's report finds the line.
            let refusal = answer(for: error).identified()
            failure = refusal
            response = refusal.response()
        }
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let path = oddPath ? Self.redacted(request.uri.path) : Self.loggedPath(request, context: context)
        logger.info(
            "\(request.method.rawValue) \(path) \(response.status.code) \(String(format: "%.1f", milliseconds))ms",
            metadata: failure?.logMetadata)
        return response
    }

    /// The error dictionary answering `error`, logging the errors that are the server's own.
    private func answer(for error: any Error) -> HTTPFailure {
        switch error {
        case let failure as HTTPFailure:
            return failure
        case let error as CloudError:
            return HTTPFailure(error)
        case let error as HTTPError:
            return Self.failure(for: error)
        case let error as HTTPParserError:
            // The client's mistake, not the server's: no error-level line.
            let failure = CloudError(.badRequest, reason: "The request body is malformed HTTP: \(error).")
            return HTTPFailure(failure, status: 400, closesConnection: true)
        case let timeout as HTTPRequestTimeout:
            return HTTPFailure(timeout.error, status: 408, closesConnection: true)
        default:
            let uuid = UUID().uuidString
            logger.error(
                "request failed",
                metadata: [
                    "serverErrorCode": "\(CloudError.Code.internalError.rawValue)", "uuid": "\(uuid)",
                    "error": "\(String(reflecting: type(of: error)))",
                ])
            return HTTPFailure(CloudError(.internalError, reason: "The server failed.", uuid: uuid))
        }
    }

    /// Whether a path has an empty segment: `//` anywhere, or a trailing `/`.
    static func hasEmptySegment(_ path: String) -> Bool {
        path != "/" && (path.contains("//") || path.hasSuffix("/"))
    }

    /// The path as it may be logged: the route's own path with its secret
    /// parameters left out, or the redacted path when no route took it.
    static func loggedPath(_ request: Request, context: Context) -> String {
        guard let route = context.endpointPath, route.hasPrefix("/") else { return redacted(request.uri.path) }
        let segments = route.split(separator: "/").map { segment -> String in
            guard segment.hasPrefix("{"), segment.hasSuffix("}") else { return String(segment) }
            let name = String(segment.dropFirst().dropLast())
            guard !CloudRoutes.secretParameters.contains(name) else { return "…" }
            return context.parameters.get(name) ?? "…"
        }
        return "/" + segments.joined(separator: "/")
    }

    /// A path no route took, with every segment after `notifications` and
    /// every segment shaped like a token (32 or more characters of hexadecimal
    /// or base64) as `…`.
    static func redacted(_ path: String) -> String {
        var afterNotifications = false
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            let decoded = String(segment).removingPercentEncoding ?? String(segment)
            defer { afterNotifications = afterNotifications || decoded.lowercased() == "notifications" }
            return afterNotifications || isTokenShaped(decoded) ? "…" : String(segment)
        }
        return segments.joined(separator: "/")
    }

    private static func isTokenShaped(_ segment: String) -> Bool {
        segment.utf8.count >= 32
            && segment.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    /// Hummingbird's own errors (no route for the path or method) as error
    /// dictionaries.
    static func failure(for error: HTTPError) -> HTTPFailure {
        switch error.status {
        case .notFound, .methodNotAllowed:
            return HTTPFailure(.notFound, "No such path.")
        case .contentTooLarge:
            return HTTPFailure(CloudError(.badRequest, reason: "The request body is too large."), status: 413)
        default:
            return HTTPFailure(
                CloudError(.badRequest, reason: error.body ?? "The request is malformed."),
                status: error.status.code < 500 ? error.status.code : 400)
        }
    }
}
