import Cumulus
import Foundation
import Hummingbird
import Logging
import NIOHTTP1

/// The outermost layer: turns every failure into an error dictionary and
/// logs one line per request.
///
/// The line holds the method, the path without its query (where the tokens
/// are), the status and the duration; a notification path is logged
/// without its token, which is a capability.
struct RequestLogMiddleware<Context: Hummingbird.RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch let failure as HTTPFailure {
            response = failure.response()
        } catch let error as CloudError {
            response = HTTPFailure(error).response()
        } catch let error as HTTPError {
            response = Self.failure(for: error).response()
        } catch let error as HTTPParserError {
            // The client's mistake, not the server's: no error-level line.
            logger.info("malformed request body", metadata: ["error": "\(error)"])
            let failure = CloudError(.badRequest, reason: "The request body is malformed HTTP: \(error).")
            response = HTTPFailure(failure, status: 400, closesConnection: true).response()
        } catch let timeout as HTTPRequestTimeout {
            response = HTTPFailure(timeout.error, status: 408, closesConnection: true).response()
        } catch {
            let uuid = UUID().uuidString
            logger.error(
                "request failed", metadata: ["uuid": "\(uuid)", "error": "\(String(reflecting: type(of: error)))"])
            response = HTTPFailure(CloudError(.internalError, reason: "The server failed.", uuid: uuid)).response()
        }
        let elapsed = ContinuousClock.now - start
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        logger.info(
            "\(request.method.rawValue) \(Self.loggedPath(request.uri.path)) \(response.status.code) \(String(format: "%.1f", milliseconds))ms"
        )
        return response
    }

    /// The path as it may be logged.
    static func loggedPath(_ path: String) -> String {
        let prefix = "/notifications/1/"
        return path.hasPrefix(prefix) ? prefix + "…" : path
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
