import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Hummingbird's HTTP/1 channel with ``HTTPConnectionGuard`` put between
/// NIO's HTTP codec and Hummingbird's, where it still sees each request's
/// HTTP version and the decoder's errors, and ``ConnectionBytesObserver``
/// in front of the decoder.
///
/// Hummingbird's own `idleTimeout` stays off: it sees only decoded parts,
/// so it cannot tell a connection with no request from a head arriving
/// slowly, and a body trickling in resets it.
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let base: HTTP1Channel
    let deadlines: ConnectionDeadlines
    let logger: Logger

    init(responder: @escaping HTTPChannelHandler.Responder, configuration: ServerConfiguration) {
        base = HTTP1Channel(responder: responder)
        deadlines = ConnectionDeadlines(
            head: TimeAmount(configuration.requestHeadTimeout), body: TimeAmount(configuration.requestBodyTimeout),
            idle: TimeAmount(configuration.idleConnectionTimeout),
            minimumBodyRate: configuration.minimumBodyRate)
        logger = configuration.logger
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let deadlines = self.deadlines
        let serverLogger = self.logger
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(
                HTTPConnectionGuard(deadlines: deadlines, logger: serverLogger), position: .after(decoder))
            try pipeline.addHandler(ConnectionBytesObserver(), position: .first)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
