import Hummingbird
import HummingbirdCore
import HummingbirdTLS

extension CumulusHTTPServer {
    /// The connection handler: the guarded HTTP/1 channel, behind TLS when
    /// the configuration has it. The guard's byte observer then sits in front
    /// of the TLS handler, so a handshake that stalls counts against the
    /// head timeout like a head that does.
    static func childChannel(
        responder: @escaping HTTPChannelHandler.Responder, configuration: ServerConfiguration
    ) throws -> any ServerChildChannel {
        let guarded = GuardedHTTP1Channel(responder: responder, configuration: configuration)
        guard let tls = configuration.tls else { return guarded }
        return try TLSChannel(guarded, tlsConfiguration: tls.configuration)
    }
}

extension ServerConfiguration {
    /// `https` with TLS, else `http`: the scheme of the URLs the server makes.
    var scheme: String { tls == nil ? "http" : "https" }
}
