import CloudCodable
import CloudProtocol
import CumulusServerCore
import HTTPTypes
import Hummingbird
import NIOCore

/// The server's request limits (``RateLimits``), shared by every
/// connection: per client address, per signed-in user, and failed
/// authentications per address.
final class RequestLimits: Sendable {
    /// A signed-in user of a container, both names compared as bytes.
    struct UserKey: Hashable, Sendable {
        let container: ExactName
        let user: ExactName
    }

    let addresses: RateLimiter<String>?
    let users: RateLimiter<UserKey>?
    let failures: RateLimiter<String>?
    /// Normalized addresses whose `X-Forwarded-For` is believed.
    let trustedProxies: Set<String>

    init(_ limits: RateLimits) {
        let capacity = limits.trackedClients
        addresses = limits.perAddress.map { RateLimiter(limit: $0, capacity: capacity, uptime: limits.uptime) }
        users = limits.perUser.map { RateLimiter(limit: $0, capacity: capacity, uptime: limits.uptime) }
        failures = limits.failedAuthentications.map {
            RateLimiter(limit: $0, capacity: capacity, uptime: limits.uptime)
        }
        // ServeCommand refuses a proxy that is not an address; one that
        // reaches here anyway is left out, which only ignores its header.
        trustedProxies = (try? limits.normalizedTrustedProxies()) ?? []
    }

    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    /// The address a request counts against: its peer's, or when the peer
    /// is a trusted proxy, the last address of `X-Forwarded-For` (the one
    /// that proxy added; those before it are the client's to invent).
    func clientAddress(of request: Request, peer: SocketAddress?) -> String {
        let peerText = peer?.ipAddress ?? "unknown"
        guard trustedProxies.contains(peerText) else { return peerText }
        let forwarded = request.headers[values: Self.forwardedFor].joined(separator: ",")
        guard let last = forwarded.split(separator: ",").last?.trimmingCharacters(in: .whitespaces),
            let address = try? SocketAddress(ipAddress: last, port: 0), let text = address.ipAddress
        else { return peerText }
        return text
    }

    /// Throws `THROTTLED` when the address has spent its requests; else
    /// takes one of them. Its failed authentications are not looked at
    /// here: they hold back credentials the server does not know, never
    /// valid ones nor requests without any (see ``CredentialGate``).
    func admit(address: String) throws(HTTPFailure) {
        if let wait = addresses?.take(address) {
            throw Self.throttled(wait, "Too many requests from this address.")
        }
    }

    /// Throws `THROTTLED` when the address has spent its failed
    /// authentications: asked before a credential is checked the costly
    /// way (the store, an issuer's signature), never for one the
    /// authentication cache knows valid.
    func admitUncheckedCredential(from address: String) throws(HTTPFailure) {
        if let wait = failures?.wait(address) {
            throw Self.throttled(wait, "Too many failed authentications from this address.")
        }
    }

    /// Throws `THROTTLED` when a signed-in user has spent their requests.
    func admit(_ caller: Caller) throws(HTTPFailure) {
        guard let users, let user = caller.user, !caller.isAnonymous else { return }
        if let wait = users.take(UserKey(container: ExactName(caller.container), user: ExactName(user))) {
            throw Self.throttled(wait, "Too many requests from this user.")
        }
    }

    /// Counts a failed authentication against the address.
    func authenticationFailed(address: String) {
        _ = failures?.take(address)
    }

    /// Whether a request's error is a refused credential.
    static func isAuthenticationFailure(_ error: any Error) -> Bool {
        switch error {
        case let failure as HTTPFailure: failure.error.code == .authenticationFailed
        case let error as CloudError: error.code == .authenticationFailed
        default: false
        }
    }

    static func throttled(_ wait: Duration, _ reason: String) -> HTTPFailure {
        HTTPFailure(CloudError(.throttled, reason: reason, retryAfter: wait))
    }
}

/// What a request's credentials meet before the store or an issuer is
/// asked about them: the failed authentications of its address. The
/// authenticator judges credentials through its cache first and serves
/// those it knows valid; only an unknown one passes here, so that a
/// guesser behind a shared address (a NAT, a proxy) holds back guesses,
/// never the valid users beside it.
struct CredentialGate: Sendable {
    let limits: RequestLimits
    /// The address the request counts against.
    let address: String

    /// Throws `THROTTLED` when the address has spent its failed authentications.
    func admit() throws(HTTPFailure) {
        try limits.admitUncheckedCredential(from: address)
    }
}

/// Applies the address limit to every request, before any route, and
/// counts the failed authentications of the routes behind it.
struct RequestLimitMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    let limits: RequestLimits

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let address = limits.clientAddress(of: request, peer: context.remoteAddress)
        try limits.admit(address: address)
        do {
            return try await next(request, context)
        } catch  where RequestLimits.isAuthenticationFailure(error) {
            limits.authenticationFailed(address: address)
            throw error
        }
    }
}
