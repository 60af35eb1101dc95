import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An HTTP request of the wire protocol, as ``RemoteCloudDatabase`` hands it
/// to its ``CloudTransport``.
///
/// Its URL may carry credentials in the query, so its description shows the
/// method and the path only.
public struct CloudHTTPRequest: Sendable, Hashable, CustomStringConvertible {
    /// `GET` or `POST`.
    public var method: String
    /// The full URL, query included.
    public var url: URL
    /// The header fields, by name.
    public var headers: [String: String]
    /// The body, or `nil` for none.
    public var body: [UInt8]?
    /// How long to wait for the answer before giving up with a network failure.
    public var timeout: Duration

    /// Creates a request.
    public init(
        method: String, url: URL, headers: [String: String] = [:], body: [UInt8]? = nil,
        timeout: Duration = .seconds(60)
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// The method and the URL's path: never the query, which may hold tokens.
    public var description: String { "\(method) \(url.path)" }
}

/// An HTTP answer, whatever its status.
public struct CloudHTTPResponse: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// The header fields, by name as the server wrote it.
    public var headers: [String: String]
    /// The body; empty for none.
    public var body: [UInt8]

    /// Creates an answer.
    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the header `name`, compared without regard to case as HTTP does.
    public func header(_ name: String) -> String? {
        if let value = headers[name] { return value }
        let lowered = name.lowercased()
        return headers.first { $0.key.lowercased() == lowered }?.value
    }
}

/// Sends HTTP requests for ``RemoteCloudDatabase``: ``URLSessionTransport``
/// in apps, a fake in tests, or an in-process server.
///
/// A transport answers every response the server sends, errors included;
/// it throws only when no answer came back, preferably a ``CloudError``
/// with code ``CloudError/Code/networkFailure``. It must honour task
/// cancellation.
public protocol CloudTransport: Sendable {
    /// Sends `request` and returns the server's answer.
    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse

    /// Sends `request` with the file's bytes as its body, read from the
    /// file as they are sent. The default reads the file whole and calls
    /// ``send(_:)``: enough for fakes, not for large files.
    func upload(_ request: CloudHTTPRequest, fromFile file: URL) async throws -> CloudHTTPResponse

    /// Sends `request` and returns the answer's status and headers as soon
    /// as they arrive, with its body to read as it arrives. The default
    /// calls ``send(_:)`` and yields the body as one chunk.
    func stream(_ request: CloudHTTPRequest) async throws -> CloudHTTPStreamedResponse
}

extension CloudTransport {
    /// Reads the file whole and sends it with ``send(_:)``.
    public func upload(_ request: CloudHTTPRequest, fromFile file: URL) async throws -> CloudHTTPResponse {
        var request = request
        request.body = [UInt8](try Data(contentsOf: file))
        return try await send(request)
    }

    /// Sends the request with ``send(_:)`` and yields its body as one chunk.
    public func stream(_ request: CloudHTTPRequest) async throws -> CloudHTTPStreamedResponse {
        let response = try await send(request)
        let (body, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self)
        if !response.body.isEmpty { continuation.yield(response.body) }
        continuation.finish()
        return CloudHTTPStreamedResponse(status: response.status, headers: response.headers, body: body)
    }
}

/// An HTTP answer whose body is still arriving: what
/// ``CloudTransport/stream(_:)`` returns.
public struct CloudHTTPStreamedResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The header fields, by name as the server wrote it.
    public var headers: [String: String]
    /// The body's chunks as they arrive; it throws a network failure when
    /// the connection breaks, and stopping to read it cancels the transfer.
    public var body: AsyncThrowingStream<[UInt8], any Error>

    /// Creates an answer.
    public init(status: Int, headers: [String: String], body: AsyncThrowingStream<[UInt8], any Error>) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the header `name`, compared without regard to case as HTTP does.
    public func header(_ name: String) -> String? {
        CloudHTTPResponse(status: status, headers: headers).header(name)
    }
}

/// A ``CloudTransport`` over `URLSession`.
///
/// It uses an ephemeral session of its own by default, with no URL cache,
/// so that no cookie, cache or credential of the request outlives it. Every `URLError` becomes
/// a ``CloudError`` with code ``CloudError/Code/networkFailure``, whose
/// reason names the error code only (the URL may hold tokens).
public struct URLSessionTransport: CloudTransport {
    private let owner: SessionOwner

    /// Creates a transport on a new session with `configuration`
    /// (ephemeral and without a URL cache when omitted).
    public init(configuration: URLSessionConfiguration? = nil) {
        let configuration = configuration ?? Self.uncachedConfiguration()
        owner = SessionOwner(session: URLSession(configuration: configuration), invalidates: true)
    }

    /// An ephemeral configuration without a URL cache. Answers of the
    /// protocol are never reusable, and on Linux a session with a cache can
    /// trap when a request is cancelled as it finishes (the cache lookup runs
    /// on another queue than the task's bookkeeping).
    private static func uncachedConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return configuration
    }

    /// Creates a transport on an existing session, which the caller keeps
    /// and invalidates.
    public init(session: URLSession) {
        owner = SessionOwner(session: session, invalidates: false)
    }

    /// Sends `request`; cancelling the calling task cancels the request.
    public func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        let urlRequest = Self.urlRequest(for: request)
        let task = TaskBox()
        return try await withTaskCancellationHandler {
            try Task.checkCancellation()
            return try await withCheckedThrowingContinuation { continuation in
                let dataTask = owner.session.dataTask(with: urlRequest) { data, response, error in
                    continuation.resume(with: Self.result(data: data, response: response, error: error))
                }
                // Cancelled before it started: the data task never runs.
                if !task.start(dataTask) { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// Sends `request` with the file as its body, memory-mapped (an asset is
    /// at most 50 MB): `URLSession`'s upload from a file sent a third as
    /// fast on Linux, where FoundationNetworking copies the body once for
    /// the request's length. Cancelling the calling task cancels the request.
    public func upload(_ request: CloudHTTPRequest, fromFile file: URL) async throws -> CloudHTTPResponse {
        let urlRequest = Self.urlRequest(for: request)
        let task = TaskBox()
        return try await withTaskCancellationHandler {
            try Task.checkCancellation()
            return try await withCheckedThrowingContinuation { continuation in
                let body: Data
                do {
                    body = try Data(contentsOf: file, options: .alwaysMapped)
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let uploadTask = owner.session.uploadTask(with: urlRequest, from: body) { data, response, error in
                    continuation.resume(with: Self.result(data: data, response: response, error: error))
                }
                if !task.start(uploadTask) { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            task.cancel()
        }
    }

    /// Sends `request` on a session of its own whose delegate yields the
    /// body's chunks as they arrive; the session ends with the transfer,
    /// and stopping to read the body cancels it.
    public func stream(_ request: CloudHTTPRequest) async throws -> CloudHTTPStreamedResponse {
        let delegate = StreamingDelegate()
        let session = URLSession(
            configuration: owner.session.configuration, delegate: delegate, delegateQueue: nil)
        let dataTask = session.dataTask(with: Self.urlRequest(for: request))
        delegate.body.onTermination = { _ in
            dataTask.cancel()
            session.finishTasksAndInvalidate()
        }
        return try await withTaskCancellationHandler {
            try Task.checkCancellation()
            return try await withCheckedThrowingContinuation { continuation in
                delegate.start(dataTask, answering: continuation)
            }
        } onCancel: {
            dataTask.cancel()
        }
    }

    private static func urlRequest(for request: CloudHTTPRequest) -> URLRequest {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = max(0.001, request.timeout.seconds)
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        return urlRequest
    }

    /// The answer or the error of a finished data task.
    fileprivate static func result(data: Data?, response: URLResponse?, error: (any Error)?) -> Result<
        CloudHTTPResponse, any Error
    > {
        if let error {
            if let urlError = error as? URLError {
                if urlError.code == .cancelled { return .failure(CancellationError()) }
                return .failure(networkFailure(for: urlError))
            }
            return .failure(
                CloudError(.networkFailure, reason: "the request failed (\(type(of: error)))", retryAfter: nil))
        }
        guard let http = response as? HTTPURLResponse else {
            return .failure(CloudError(.networkFailure, reason: "the answer was not an HTTP response"))
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            headers[String(describing: name)] = String(describing: value)
        }
        return .success(
            CloudHTTPResponse(status: http.statusCode, headers: headers, body: data.map { Array($0) } ?? []))
    }

    /// The network failure a `URLError` stands for, with a reason built from
    /// its code alone: its description and user info may hold the URL.
    public static func networkFailure(for error: URLError) -> CloudError {
        let what: String
        switch error.code {
        case .timedOut: what = "the request timed out"
        case .cannotConnectToHost: what = "the server refused the connection"
        case .networkConnectionLost: what = "the connection was lost"
        case .notConnectedToInternet: what = "the device is offline"
        case .cannotFindHost, .dnsLookupFailed: what = "the server's name could not be resolved"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            what = "the secure connection failed"
        case .badServerResponse: what = "the server's answer was malformed"
        default: what = "the request failed"
        }
        return CloudError(.networkFailure, reason: "\(what) (URLError \(error.code.rawValue))")
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// Holds the session, and invalidates it when the last copy of the
/// transport goes away if the transport created it.
private final class SessionOwner: Sendable {
    let session: URLSession
    let invalidates: Bool

    init(session: URLSession, invalidates: Bool) {
        self.session = session
        self.invalidates = invalidates
    }

    deinit {
        // A session keeps itself alive until invalidated; only ours is ours to end.
        if invalidates { session.finishTasksAndInvalidate() }
    }
}

/// The data task of one request, which cancellation may reach before it exists.
private final class TaskBox: @unchecked Sendable {
    // Safety: `task` and `cancelled` are touched only while `lock` is held.
    private let lock = NSLock()
    private var task: URLSessionTask?
    private var cancelled = false

    /// Starts `task`, or returns `false` without starting it when the
    /// request was already cancelled.
    func start(_ task: URLSessionTask) -> Bool {
        lock.lock()
        self.task = task
        let cancelled = cancelled
        lock.unlock()
        guard !cancelled else { return false }
        task.resume()
        return true
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = task
        lock.unlock()
        task?.cancel()
    }
}

/// The delegate of one streamed transfer: answers the status and headers
/// once they arrive, then yields the body's chunks.
private final class StreamingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safety: `answer` is touched only while `lock` is held; the stream's
    // continuation is Sendable, and the rest is set before the task starts.
    private let lock = NSLock()
    private var answer: CheckedContinuation<CloudHTTPStreamedResponse, any Error>?
    let stream: AsyncThrowingStream<[UInt8], any Error>
    let body: AsyncThrowingStream<[UInt8], any Error>.Continuation

    override init() {
        (stream, body) = AsyncThrowingStream.makeStream(of: [UInt8].self)
    }

    func start(
        _ task: URLSessionDataTask, answering continuation: CheckedContinuation<CloudHTTPStreamedResponse, any Error>
    ) {
        lock.lock()
        answer = continuation
        lock.unlock()
        task.resume()
    }

    /// The continuation of the answer, once: later calls get `nil`.
    private func takeAnswer() -> CheckedContinuation<CloudHTTPStreamedResponse, any Error>? {
        lock.lock()
        defer { lock.unlock() }
        let taken = answer
        answer = nil
        return taken
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse else {
            completionHandler(.cancel)
            takeAnswer()?.resume(throwing: CloudError(.networkFailure, reason: "the answer was not an HTTP response"))
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields { headers[String(describing: name)] = String(describing: value) }
        completionHandler(.allow)
        takeAnswer()?.resume(
            returning: CloudHTTPStreamedResponse(status: http.statusCode, headers: headers, body: stream))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        body.yield([UInt8](data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let failure: (any Error)? = error.map { error in
            guard let urlError = error as? URLError else {
                return CloudError(.networkFailure, reason: "the request failed (\(type(of: error)))")
            }
            return urlError.code == .cancelled ? CancellationError() : URLSessionTransport.networkFailure(for: urlError)
        }
        if let failure {
            takeAnswer()?.resume(throwing: failure)
            body.finish(throwing: failure)
        } else {
            takeAnswer()?.resume(throwing: CloudError(.networkFailure, reason: "the answer ended before its headers"))
            body.finish()
        }
        session.finishTasksAndInvalidate()
    }
}
