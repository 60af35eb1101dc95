import Hummingbird
import NIOCore

/// The request context of the record server's routes: Hummingbird's basic
/// one, the address of the connection's peer, which the request limits
/// count against, and what authentication found for a database request.
struct CumulusRequestContext: AuthenticatedRequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection's peer: the client, or the proxy in front of it.
    let remoteAddress: SocketAddress?
    /// Set by ``AuthenticationMiddleware`` before a database route runs.
    var authentication: Authentication?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
