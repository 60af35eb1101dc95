import CloudCodable
import CloudProtocol
import Hummingbird

/// Counts each request by operation and status, times it, and keeps the
/// gauge of notification polls waiting; the outermost layer, so that it
/// sees the status the client gets.
///
/// The operation is the protocol's (`records/modify`) for a database path,
/// `unknown` for a database path naming none, the route's template
/// (`/notifications/1/{token}`) for any other route, and `unmatched` when
/// no route took the path: never the path as sent, which holds tokens and
/// names. The time runs until the answer's head is ready.
struct MetricsMiddleware<Context: Hummingbird.RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    /// The route of the notification long poll.
    static var pollRoute: String { "/notifications/1/{token}" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let start = ContinuousClock.now
        let operation = Self.operation(of: context)
        let polling = operation == Self.pollRoute
        if polling { metrics.pollsChanged(by: 1) }
        defer { if polling { metrics.pollsChanged(by: -1) } }
        do {
            let response = try await ServerMetrics.$current.withValue(metrics) {
                try await next(request, context)
            }
            metrics.requestAnswered(
                operation: operation, status: response.status.code, duration: ContinuousClock.now - start)
            return response
        } catch {
            // Only a layer inside that does not answer errors itself gets here.
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            metrics.requestAnswered(operation: operation, status: status, duration: ContinuousClock.now - start)
            throw error
        }
    }

    /// The request's operation or route, from the route the router matched.
    static func operation(of context: Context) -> String {
        guard let route = context.endpointPath, route.hasPrefix("/") else { return ServerMetrics.unmatched }
        guard route.hasPrefix("/database/") else { return route }
        return DatabaseRoute.operation(named: DatabaseRoute.operationName(in: context.parameters))?.rawValue
            ?? "unknown"
    }
}
