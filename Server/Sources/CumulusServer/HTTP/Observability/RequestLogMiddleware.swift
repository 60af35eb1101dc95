import CloudCodable
import CloudProtocol
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
/// never shows a credential, however it is spelled (see
/// ``redacted(_:secretPositions:wholeAfterNotifications:)``): the
/// segment after `share`, `download` or `upload`, the parameters a route
/// marks secret (``CloudRoutes/secretParameters``), on a path no route
/// takes every segment after `notifications`, and every segment shaped
/// like a token are logged as `…`.
struct RequestLogMiddleware<Context: Hummingbird.RequestContext>: RouterMiddleware {
    let logger: Logger
    /// Where each failure is kept for the console, if it is on.
    var failures: RecentFailures? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let start = ContinuousClock.now
        let oddPath = Self.hasEmptySegment(request.uri.path)
        var response: Response
        var failure: HTTPFailure?
        let facts = RequestFacts()
        do {
            // The router skips empty segments; refusing them keeps one spelling per path.
            guard !oddPath else { throw HTTPFailure(.notFound, "No such path: a path has no empty segment.") }
            response = try await RequestFacts.$current.withValue(facts) { try await next(request, context) }
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
        if let failure, let failures {
            failures.record(
                RecordedFailure(
                    uuid: failure.error.uuid ?? "", date: Date(), request: "\(request.method.rawValue) \(path)",
                    operation: facts.operation, user: facts.user, status: failure.status,
                    code: failure.error.code.rawValue, reason: failure.error.reason))
        }
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
        // `/console/` is the console's address as operators type it.
        path != "/" && path != "/console/" && (path.contains("//") || path.hasSuffix("/"))
    }

    /// The path as it may be logged (see ``redacted(_:secretPositions:wholeAfterNotifications:)``),
    /// with the parameters its route marks secret (``CloudRoutes/secretParameters``) left out too.
    static func loggedPath(_ request: Request, context: Context) -> String {
        let path = request.uri.path
        guard let route = context.endpointPath, route.hasPrefix("/") else { return redacted(path) }
        // A routed path has no empty segment: the route's segments are the path's, one for one, up to `**`.
        var secretPositions = Set<Int>()
        for (position, segment) in route.split(separator: "/").enumerated() {
            if segment == "**" { break }
            guard segment.hasPrefix("{"), segment.hasSuffix("}") else { continue }
            if CloudRoutes.secretParameters.contains(String(segment.dropFirst().dropLast())) {
                secretPositions.insert(position)
            }
        }
        return redacted(path, secretPositions: secretPositions, wholeAfterNotifications: false)
    }

    /// A path with what may be a credential as `…`, judged by what it
    /// holds rather than its exact shape: the first segment after each
    /// `share`, `download` or `upload` segment anywhere, every segment
    /// after `notifications` (unless a route says which one is the token),
    /// every segment shaped like a token (32 or more characters of
    /// hexadecimal or base64), and the non-empty segments at
    /// `secretPositions`. Segments are judged percent-decoded, a decoded
    /// `/` splitting them, with empty, `.` and `..` ones passed over, so no
    /// spelling of a credential path shows its secret; a path that does not
    /// decode is `…` whole.
    static func redacted(
        _ path: String, secretPositions: Set<Int> = [], wholeAfterNotifications: Bool = true
    ) -> String {
        var capabilityNext = false
        var afterNotifications = false
        var position = 0
        var logged: [String] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = String(segment).removingPercentEncoding else { return "…" }
            var secret = !segment.isEmpty && secretPositions.contains(position)
            if !segment.isEmpty { position += 1 }
            for part in decoded.split(separator: "/", omittingEmptySubsequences: false)
            where !part.isEmpty && part != "." && part != ".." {
                if afterNotifications || capabilityNext || isTokenShaped(part) { secret = true }
                let word = part.lowercased()
                capabilityNext = capabilityMarkers.contains(word)
                if wholeAfterNotifications && word == "notifications" { afterNotifications = true }
            }
            logged.append(secret ? "…" : String(segment))
        }
        return logged.joined(separator: "/")
    }

    private static func isTokenShaped(_ segment: Substring) -> Bool {
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

/// The path segments after which the next one is a capability: a share's
/// shortGUID, an asset download's token, an upload's ticket.
private let capabilityMarkers: Set<String> = ["share", "download", "upload"]
