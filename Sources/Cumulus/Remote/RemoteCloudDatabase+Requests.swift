import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What sends the wire protocol's requests: the configuration and the
/// transport, without the database's mutable state, so that notification
/// tasks can hold it without holding the database.
struct RemoteSession: Sendable {
    let configuration: RemoteCloudDatabase.Configuration
    let transport: any CloudTransport

    /// Sends `request` with `authorization` and reads the answer.
    /// `headers` go along too (``CloudRequest/writingChannelHeader``, say).
    func perform(
        _ request: CloudRequest, authorization: RequestAuthorization, headers: [String: String] = [:]
    ) async throws -> CloudResponse {
        let operation = request.operation
        var http = try httpRequest(for: operation, body: try request.encodedBody(), authorization: authorization)
        http.headers.merge(headers) { current, _ in current }
        let response = try await send(http)
        guard (200..<300).contains(response.status) else { throw Self.error(for: response, now: now()) }
        return try CloudResponse.decode(operation, body: response.body)
    }

    /// The HTTP request of `operation`: its URL, credentials and body.
    func httpRequest(for operation: CloudOperation, body: [UInt8]?, authorization: RequestAuthorization) throws
        -> CloudHTTPRequest
    {
        let subpath =
            "/database/1/\(Self.percentEncoded(configuration.container))/\(configuration.environment.rawValue)"
            + "/\((operation.fixedScope ?? configuration.scope).rawValue)/\(operation.rawValue)"
        return try authorizedRequest(
            method: operation.httpMethod, address: baseAddress + subpath, query: [], subpath: subpath, body: body,
            authorization: authorization, timeout: configuration.requestTimeout)
    }

    /// One long poll of the notification channel `token`, from `cursor`
    /// (from the channel's creation when `nil`).
    func poll(token: NotificationToken, cursor: String?, authorization: RequestAuthorization) async throws
        -> NotificationBatch
    {
        let http = try pollRequest(token: token, cursor: cursor, authorization: authorization)
        let response = try await send(http)
        guard (200..<300).contains(response.status) else { throw Self.error(for: response, now: now()) }
        return try NotificationBatch.decode(body: response.body)
    }

    /// The poll's request. Credentials go along only when the poll's URL is
    /// on the database's own server: the token in the URL is the channel's
    /// capability, and a foreign host gets no user token.
    func pollRequest(token: NotificationToken, cursor: String?, authorization: RequestAuthorization) throws
        -> CloudHTTPRequest
    {
        var address = token.webcourierURL
        if address.hasPrefix("/") { address = origin(of: configuration.baseURL) + address }
        guard let url = URL(string: address), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { throw CloudError(.badRequest, reason: "the notification token's URL is not an HTTP URL") }
        let holdSeconds = max(0, Int((configuration.notificationPollTimeout / .seconds(1)).rounded(.up)))
        var query: [(String, String)] = []
        if let cursor { query.append(("cursor", cursor)) }
        query.append(("timeout", String(holdSeconds)))
        let timeout = configuration.notificationPollTimeout + configuration.requestTimeout
        guard origin(of: url) == origin(of: configuration.baseURL) else {
            return CloudHTTPRequest(
                method: "GET", url: try Self.url(address, query: query), headers: ["Accept": "application/json"],
                timeout: timeout)
        }
        return try authorizedRequest(
            method: "GET", address: address, query: query, subpath: url.path, body: nil,
            authorization: authorization, timeout: timeout)
    }

    /// A request with the credentials in its query (a user's tokens) or its
    /// headers (a server-to-server signature, an identity token).
    private func authorizedRequest(
        method: String, address: String, query: [(String, String)], subpath: String, body: [UInt8]?,
        authorization: RequestAuthorization, timeout: Duration
    ) throws -> CloudHTTPRequest {
        let credentials = authorization.credentials
        var query = query
        var headers = ["Accept": "application/json"]
        if body != nil { headers["Content-Type"] = "application/json; charset=utf-8" }
        if let apiToken = credentials.apiToken { query.append(("ckAPIToken", apiToken)) }
        switch credentials {
        case .user(_, let webAuthToken):
            if let webAuthToken { query.append(("ckWebAuthToken", webAuthToken)) }
        case .serverKey(_, let signer):
            let date = CloudRequestSigning.dateString(for: configuration.currentDate())
            let message = CloudRequestSigning.message(date: date, body: body ?? [], subpath: subpath)
            let signature: [UInt8]
            do {
                signature = try signer.signature(for: message)
            } catch let error as CloudError {
                throw error
            } catch {
                // The type only: a signer's error might quote its key.
                throw CloudError(.authenticationFailed, reason: "the request could not be signed (\(type(of: error)))")
            }
            headers[CloudRequestSigning.keyIDHeader] = signer.keyID
            headers[CloudRequestSigning.dateHeader] = date
            headers[CloudRequestSigning.signatureHeader] = Data(signature).base64EncodedString()
        case .identity:
            // A header, never the query: URLs end up in proxies' and servers' logs.
            if let token = authorization.identityToken { headers["Authorization"] = "Bearer " + token }
        }
        return CloudHTTPRequest(
            method: method, url: try Self.url(address, query: query), headers: headers, body: body, timeout: timeout)
    }

    /// Sends `request`, turning whatever the transport throws into a
    /// network failure (or the cancellation it was).
    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        do {
            return try await transport.send(request)
        } catch let error as CloudError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as URLError {
            if error.code == .cancelled && Task.isCancelled { throw CancellationError() }
            throw URLSessionTransport.networkFailure(for: error)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw CloudError(.networkFailure, reason: "the request failed (\(type(of: error)))")
        }
    }

    /// The error a non-2xx answer stands for: its error dictionary, or what
    /// its status says, with the `Retry-After` header as the retry delay when
    /// the dictionary gives none.
    static func error(for response: CloudHTTPResponse, now: Date) -> CloudError {
        var error = CloudError.decode(
            httpStatus: response.status, body: response.body, contentType: response.header("Content-Type"))
        if error.retryAfter == nil, let header = response.header("Retry-After") {
            error.retryAfter = retryAfter(header, now: now)
        }
        return error
    }

    /// A `Retry-After` value: delay seconds, or an HTTP date.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return seconds >= 0 ? .seconds(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        let seconds = max(0, date.timeIntervalSince(now))
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// `address` with `query` appended, each name and value percent-encoded.
    static func url(_ address: String, query: [(String, String)]) throws -> URL {
        var text = address
        if !query.isEmpty {
            text += address.contains("?") ? "&" : "?"
            text += query.map { "\(percentEncoded($0.0))=\(percentEncoded($0.1))" }.joined(separator: "&")
        }
        // The reason names no part of the URL: its query holds tokens.
        guard let url = URL(string: text) else {
            throw CloudError(.badRequest, reason: "the request's URL is not valid")
        }
        return url
    }

    /// `text` with every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`)
    /// percent-encoded, so that `+`, `/` and `=` in tokens survive the query.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes.append(contentsOf: [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The base URL without trailing slashes, to which the path is appended.
    private var baseAddress: String {
        var address = configuration.baseURL.absoluteString
        while address.hasSuffix("/") { address.removeLast() }
        return address
    }

    /// `scheme://host:port`, lowercased, with the scheme's default port spelled out.
    func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    func now() -> Date { configuration.currentDate() }
}
