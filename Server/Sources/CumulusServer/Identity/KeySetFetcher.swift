import AsyncHTTPClient
import CloudCodable
import CloudProtocol
import NIOCore

/// Fetches an issuer's key set (JWKS) from its URL with AsyncHTTPClient,
/// held to a size and a deadline: a URL that streams without end, never
/// answers or drips a byte at a time costs at most ``maximumSize`` bytes
/// and ``timeout`` of waiting.
struct KeySetFetcher: Sendable {
    /// The longest a whole fetch may take: connecting, the answer's head
    /// and its body, redirects included.
    let timeout: Duration
    /// The largest document accepted, in bytes: reading stops there.
    let maximumSize: Int
    /// The client the fetches go through.
    var client: HTTPClient = .shared

    /// The document at `address`. Throws ``CloudError`` for an answer that
    /// is not a 200 with at most ``maximumSize`` bytes of UTF-8 within
    /// ``timeout``, and whatever AsyncHTTPClient throws when the address
    /// cannot be reached.
    func fetch(_ address: String) async throws -> String {
        let late = CloudError(.internalError, reason: "the key set URL did not answer in full within \(timeout)")
        // AsyncHTTPClient's deadline ends the wait for the head, not a body
        // that drips: the race with a timer ends the whole fetch, whose
        // cancellation closes the connection.
        let body = try await withThrowingTaskGroup(of: ByteBuffer.self) { group in
            group.addTask { try await download(address) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw late
            }
            defer { group.cancelAll() }
            do {
                return try await group.next()!
            } catch let error as HTTPClientError where error == .deadlineExceeded {
                throw late
            }
        }
        guard let text = String(validating: body.readableBytesView, as: UTF8.self) else {
            throw CloudError(.internalError, reason: "the key set is not UTF-8")
        }
        return text
    }

    /// The body of a 200 answer, read up to the limit.
    private func download(_ address: String) async throws -> ByteBuffer {
        var request = HTTPClientRequest(url: address)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request, deadline: .now() + TimeAmount(timeout))
        guard response.status == .ok else {
            // The body is not read: dropping it closes the connection.
            throw CloudError(.internalError, reason: "the key set URL answered \(response.status.code), not 200")
        }
        do {
            return try await response.body.collect(upTo: maximumSize)
        } catch is NIOTooManyBytesError {
            throw CloudError(.internalError, reason: "the key set is larger than \(maximumSize) bytes")
        }
    }
}
