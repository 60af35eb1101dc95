import Hummingbird
import NIOCore

/// The request context of the record server's routes: Hummingbird's basic
/// one and the address of the connection's peer, which the request limits
/// count against.
struct CumulusRequestContext: RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection's peer: the client, or the proxy in front of it.
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
