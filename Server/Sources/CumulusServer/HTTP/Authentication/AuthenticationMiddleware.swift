import CloudCodable
import CloudProtocol
import Hummingbird

/// What the authentication of a database request found, on the request's
/// context for the route.
struct Authentication: Sendable {
    /// What the path names.
    let route: DatabaseRoute
    /// Who sends the request.
    let caller: Caller
    /// The credential the request carries, as a notification channel keeps
    /// it; `nil` for an anonymous reader.
    let credential: ChannelCredential?
    /// A signed request's body, read to check its signature; `nil` when the
    /// route has yet to read it.
    let signedBody: [UInt8]?
}

/// A request context that carries what ``AuthenticationMiddleware`` found.
protocol AuthenticatedRequestContext: RemoteAddressRequestContext {
    /// What authentication found; set before a database route runs.
    var authentication: Authentication? { get set }
}

/// The one step that authenticates database requests, in front of every
/// database route: it reads the path (``DatabaseRoute``), checks the
/// credentials the request carries (``RequestAuthenticator``), applies the
/// per-user request limit, and puts the ``Authentication`` on the context.
/// A request that fails here never reaches its route.
struct AuthenticationMiddleware<Context: AuthenticatedRequestContext>: RouterMiddleware {
    let authenticator: RequestAuthenticator
    let limits: RequestLimits

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let route = try DatabaseRoute(request, parameters: context.parameters)
        RequestFacts.current?.note(user: nil, operation: route.operation.rawValue)
        let gate = CredentialGate(
            limits: limits, address: limits.clientAddress(of: request, peer: context.remoteAddress))
        let authentication = try await authenticator.authenticate(request, route: route, gate: gate)
        RequestFacts.current?.note(user: authentication.caller.user, operation: route.operation.rawValue)
        try limits.admit(authentication.caller)
        var context = context
        context.authentication = authentication
        return try await next(request, context)
    }
}
