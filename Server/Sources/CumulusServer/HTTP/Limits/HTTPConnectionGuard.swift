import CloudCodable
import CloudProtocol
import Logging
import NIOCore
import NIOHTTP1

/// Guards one HTTP/1 connection, between NIO's HTTP codec and Hummingbird:
///
/// - the head, body and idle timeouts of ``ConnectionDeadlines``: a head
///   too slow is answered 408, a body too slow (or stalled) fails its read
///   (the route answers 408), an idle connection is closed;
/// - a malformed request (a bad chunk, a bad `Transfer-Encoding`) answered
///   400 with an error dictionary and logged at info level, where
///   Hummingbird would answer an empty 400 or let the route fail with 500;
/// - a request that does not keep the connection alive (HTTP/1.0 without
///   `Connection: keep-alive`, or `Connection: close`) answered in its own
///   HTTP version, then the connection closed.
///
/// Every answer that says `Connection: close` closes the connection once written.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What an answer needs to know of its request.
    private struct OpenRequest {
        var version: HTTPVersion
        var keepAlive: Bool
    }

    private var deadlines: ConnectionDeadlines
    private var timer: Scheduled<Void>?
    /// Requests read and not answered yet, oldest first.
    private var open: [OpenRequest] = []
    /// Between a head and the end of its body, which may outlive the answer.
    private var readingBody = false
    /// The decoder failed: it reads nothing more on this connection.
    private var malformed = false
    /// The connection closes once the answer being written ends.
    private var closing = false
    private let logger: Logger

    init(deadlines: ConnectionDeadlines, logger: Logger) {
        self.deadlines = deadlines
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { perform(deadlines.opened(now: .now()), context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
    }

    func channelActive(context: ChannelHandlerContext) {
        perform(deadlines.opened(now: .now()), context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            open.append(OpenRequest(version: head.version, keepAlive: head.isKeepAlive))
            readingBody = true
            perform(deadlines.headRead(now: .now()), context: context)
        case .body(let bytes):
            perform(deadlines.bodyRead(bytes.readableBytes, now: .now()), context: context)
        case .end:
            readingBody = false
            perform(deadlines.bodyEnded(now: .now()), context: context)
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ConnectionBytesObserver.BytesArrived else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        perform(deadlines.bytesArrived(now: .now()), context: context)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError || error is ByteToMessageDecoderError else {
            context.fireErrorCaught(error)
            return
        }
        // After its first error the decoder reports every further read; one answer is enough.
        // A partial request left when the connection closes needs none.
        guard !malformed, context.channel.isActive else { return }
        malformed = true
        closing = true
        if !open.isEmpty {
            // The body of a request being answered: its read throws, and the route answers 400.
            context.fireErrorCaught(error)
        } else if readingBody {
            // The rest of the body of a request answered already.
            context.close(promise: nil)
        } else {
            // The head itself is malformed: no route will see this request.
            cancelTimer()
            answer(
                HTTPFailure(.badRequest, "The request is malformed HTTP: \(error)."), logging: "malformed request",
                metadata: ["error": "\(error)"], context: context)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        guard let request = open.first else {
            // An answer with no request open is Hummingbird's empty 400 to a
            // malformed request, which this guard answered already.
            promise?.succeed()
            if case .end = part { context.close(promise: nil) }
            return
        }
        switch part {
        case .head(var head) where head.status.code >= 200:
            // Hummingbird answers HTTP/1.1; it says `Connection: close` when the answer ends the connection.
            let answerCloses = !head.isKeepAlive
            if request.version == .http1_0 { head.version = .http1_0 }
            if closing || !request.keepAlive || answerCloses {
                closing = true
                head.headers.replaceOrAdd(name: "Connection", value: "close")
            } else if request.version == .http1_0 {
                head.headers.replaceOrAdd(name: "Connection", value: "keep-alive")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .head, .body:
            context.write(data, promise: promise)
        case .end:
            open.removeFirst()
            perform(deadlines.answerEnded(now: .now()), context: context)
            guard closing else {
                context.write(data, promise: promise)
                return
            }
            writeThenClose(data, promise: promise, context: context)
        }
    }

    /// Answers `failure` from here, below Hummingbird, and closes the
    /// connection; logs `message` with the code and uuid of the answer.
    private func answer(
        _ failure: HTTPFailure, logging message: Logger.Message, metadata: Logger.Metadata,
        context: ChannelHandlerContext
    ) {
        let failure = failure.identified()
        logger.info(message, metadata: metadata.merging(failure.logMetadata) { $1 })
        let (head, body) = failure.http1Parts()
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        writeThenClose(wrapOutboundOut(.end(nil)), promise: nil, context: context)
    }

    /// Closes once the last part is written: closing at once would drop what is still queued.
    private func writeThenClose(_ data: NIOAny, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(data, promise: written)
        written.futureResult.assumeIsolated().whenComplete { result in
            promise?.completeWith(result)
            context.close(promise: nil)
        }
    }

    private func perform(_ action: ConnectionDeadlines.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .cancel:
            cancelTimer()
        case .schedule(let deadline):
            timer?.cancel()
            timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
                self.timer = nil
                self.perform(self.deadlines.timerFired(now: .now()), context: context)
            }
        case .expire(let phase):
            expire(phase, context: context)
        }
    }

    private func expire(_ phase: ConnectionDeadlines.Phase, context: ChannelHandlerContext) {
        closing = true
        switch phase {
        case .idle:
            logger.debug("closing an idle connection")
            context.close(promise: nil)
        case .head:
            answer(
                HTTPFailure(HTTPRequestTimeout.head.error, status: 408, closesConnection: true),
                logging: "request head timed out", metadata: ["timeout": "\(deadlines.head)"], context: context)
        case .body where open.isEmpty:
            // Answered already; what is left of the body was being drained.
            context.close(promise: nil)
        case .body:
            // The route answers 408; its request line carries the code and uuid.
            logger.debug("request body timed out", metadata: ["timeout": "\(deadlines.body)"])
            context.fireErrorCaught(HTTPRequestTimeout.body)
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}

/// Tells ``HTTPConnectionGuard`` that bytes arrived, before the decoder
/// sees them: a head's deadline starts at its first byte, which the
/// decoder does not report.
final class ConnectionBytesObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The event sent down the pipeline for each read.
    struct BytesArrived {}

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireUserInboundEventTriggered(BytesArrived())
        context.fireChannelRead(data)
    }
}

/// A request that took longer than its timeout to arrive.
enum HTTPRequestTimeout: Error {
    case head
    case body

    /// The error dictionary it is answered with (status 408).
    var error: CloudError {
        switch self {
        case .head: CloudError(.badRequest, reason: "The request head took longer than the server waits.")
        case .body: CloudError(.badRequest, reason: "The request body took longer than the server waits.")
        }
    }
}
