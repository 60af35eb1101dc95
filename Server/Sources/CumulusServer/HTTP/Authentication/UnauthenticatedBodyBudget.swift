import CloudCodable
import CloudProtocol
import Synchronization

/// The body bytes the server holds, all requests together, for requests
/// signed with a server-to-server key whose signature (which covers the
/// body) is not checked yet. Without it, anyone who knows a key ID could
/// make the server hold the largest body once per connection.
///
/// A request reserves its declared length (the largest body for a chunked
/// one) before reading its body, and gives it back once it is
/// authenticated or refused. One that does not fit now is answered 503
/// `TRY_AGAIN_LATER` rather than made to wait: a wait would hold its
/// connection, and the client retries after `retryAfter`. One that could
/// never fit is answered 413.
final class UnauthenticatedBodyBudget: Sendable {
    private struct Held {
        var bytes = 0
        var bodies = 0
    }

    let maximumBytes: Int
    let maximumBodies: Int
    private let held = Mutex(Held())

    init(maximumBytes: Int, maximumBodies: Int) {
        self.maximumBytes = maximumBytes
        self.maximumBodies = maximumBodies
    }

    /// Bytes and bodies held now.
    var holding: (bytes: Int, bodies: Int) {
        held.withLock { ($0.bytes, $0.bodies) }
    }

    /// Runs `body` with `bytes` reserved, or throws the answer for a
    /// request that does not fit.
    func withReservation<T>(of bytes: Int, _ body: () async throws -> T) async throws -> T {
        guard bytes <= maximumBytes else {
            throw HTTPFailure(
                CloudError(
                    .badRequest,
                    reason: "A signed request body is larger than the \(maximumBytes) bytes read before it is checked."),
                status: 413)
        }
        let reserved = held.withLock { held in
            guard held.bodies < maximumBodies, held.bytes + bytes <= maximumBytes else { return false }
            held.bytes += bytes
            held.bodies += 1
            return true
        }
        guard reserved else {
            throw HTTPFailure(
                CloudError(
                    .tryAgainLater, reason: "Too many signed request bodies are being read; try again later.",
                    retryAfter: .seconds(1)))
        }
        defer {
            held.withLock { held in
                held.bytes -= bytes
                held.bodies -= 1
            }
        }
        return try await body()
    }
}
