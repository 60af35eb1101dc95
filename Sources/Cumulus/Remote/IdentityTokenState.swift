import Foundation

/// The identity token ``RemoteCloudDatabase`` keeps for
/// ``RemoteCloudDatabase/Credentials/identity(apiToken:token:)``, and when
/// to ask the provider for another: a state machine with no tasks, whose
/// owner holds it under a lock and carries out what it answers.
///
/// One call of the provider is under way at a time, and every request that
/// needs a token meanwhile waits for it. The identity of each answer is
/// compared with the last one's: a change is a change of account.
struct IdentityTokenState {
    /// How long before its expiry a token is replaced: a request must not
    /// reach the server with a token that expired on the way.
    static let refreshMargin: TimeInterval = 60

    /// The token kept from the provider's last answer; `nil` when none is
    /// kept (never asked, the answer was `nil`, or forgotten).
    private(set) var token: String?
    /// When the kept token expires, if its payload says.
    private(set) var expiry: Date?
    /// Whom the last answer spoke for; `nil` until the first answer.
    private(set) var identity: TokenIdentity?
    /// The call of the provider under way, by number.
    private(set) var fetching: UInt64?
    private var fetchCount: UInt64 = 0

    /// What a request does to get its token.
    enum Step: Equatable {
        /// Send with this token (`nil`: with the API token alone).
        case send(String?)
        /// Call the provider (call number `fetch`), then send with its answer.
        case fetch(UInt64, refresh: Bool)
        /// Wait for call `fetch`, already under way, then send with its answer.
        case wait(UInt64)
    }

    /// The step of a request at `now`. `refused` is the token a first
    /// attempt of the request was sent with and the server refused: a token
    /// other than that one is sent if kept, else the provider is asked for
    /// a fresh one.
    mutating func next(now: Date, refused: String? = nil) -> Step {
        if let fetching { return .wait(fetching) }
        guard let token else { return startFetch(refresh: false) }
        if let refused, Self.same(token, refused) { return startFetch(refresh: true) }
        if let expiry, expiry.timeIntervalSince(now) <= Self.refreshMargin { return startFetch(refresh: true) }
        return .send(token)
    }

    private mutating func startFetch(refresh: Bool) -> Step {
        fetchCount += 1
        fetching = fetchCount
        return .fetch(fetchCount, refresh: refresh)
    }

    /// What became of a call of the provider.
    enum Answer: Equatable {
        /// The answer is kept; `accountChanged` when it speaks for another
        /// identity than the last answer did.
        case kept(String?, accountChanged: Bool)
        /// The credentials changed during the call: the answer is dropped.
        case stale
    }

    /// Records the provider's answer to call `fetch`.
    mutating func fetched(_ answer: String?, fetch: UInt64) -> Answer {
        guard fetching == fetch else { return .stale }
        fetching = nil
        let newIdentity = TokenIdentity(token: answer)
        let changed = identity.map { $0 != newIdentity } ?? false
        identity = newIdentity
        token = answer
        expiry = answer.flatMap { IdentityTokenClaims(token: $0)?.expiry }
        return .kept(answer, accountChanged: changed)
    }

    /// Notes that call `fetch` failed: the kept token stays, and the next
    /// request asks again. Returns whether the call was still the current one.
    mutating func failed(fetch: UInt64) -> Bool {
        guard fetching == fetch else { return false }
        fetching = nil
        return true
    }

    /// Forgets the kept token and the call under way, keeping the identity
    /// the next answer is compared with: the app set the credentials again,
    /// maybe after a sign-in or a sign-out.
    mutating func forgetToken() {
        token = nil
        expiry = nil
        fetching = nil
    }

    /// Forgets everything, the identity included: the credentials became
    /// identity credentials after others, a change of account already.
    mutating func reset() {
        forgetToken()
        identity = nil
    }

    /// Whether two tokens are the same bytes.
    static func same(_ lhs: String?, _ rhs: String?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case (let lhs?, let rhs?): lhs.utf8.elementsEqual(rhs.utf8)
        default: false
        }
    }
}
