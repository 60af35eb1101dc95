import Foundation

/// The credentials one attempt of a request is sent with: those of the
/// moment, the identity token they stand for, and the account generation
/// both belong to, read together.
struct RequestAuthorization: Sendable {
    var credentials: RemoteCloudDatabase.Credentials
    /// The identity token of `.identity` credentials; `nil` for others and
    /// while nobody is signed in.
    var identityToken: String?
    var generation: UInt64
}

/// What a call of the identity token provider ends with: the credentials
/// to send with, `nil` when the credentials changed during the call (ask
/// again), or the error to surface.
typealias IdentityFetchOutcome = Result<RequestAuthorization?, CloudError>

extension NotificationChannels {
    /// Sends with the credentials of the moment, and sends once more when
    /// the server refused an identity token (`AUTHENTICATION_FAILED`) and the
    /// provider gives another. Returns the answer and the credentials it was
    /// sent with.
    ///
    /// - Parameter generation: The account the request must be sent as (a
    ///   bound view's check, a channel's account); `nil` for any. Once it
    ///   changed, nothing is sent: ``CloudError/Code/accountChanged``.
    func send<Answer>(
        as generation: UInt64?, now: () -> Date, _ attempt: (RequestAuthorization) async throws -> Answer
    ) async throws -> (Answer, RequestAuthorization) {
        let first = try await authorization(now: now())
        try Self.check(first, against: generation)
        do {
            return (try await attempt(first), first)
        } catch let error as CloudError where error.code == .authenticationFailed {
            guard let refused = first.identityToken else { throw error }
            let second = try await authorization(now: now(), refused: refused)
            guard case .identity = second.credentials, !IdentityTokenState.same(second.identityToken, refused) else {
                throw error
            }
            try Self.check(second, against: generation)
            return (try await attempt(second), second)
        }
    }

    private static func check(_ authorization: RequestAuthorization, against generation: UInt64?) throws {
        guard let generation, generation != authorization.generation else { return }
        throw CloudError(
            .accountChanged, reason: "the credentials changed after the account was checked; nothing was sent")
    }

    /// The credentials to send a request with now: for `.identity`
    /// credentials, the token kept, or the provider's next answer (shared
    /// with every request that needs one meanwhile).
    ///
    /// - Parameter refused: The identity token the server just refused.
    func authorization(now: Date, refused: String? = nil) async throws -> RequestAuthorization {
        while true {
            let next: AuthorizationStep = withLock { state in
                guard case .identity(_, let provider) = state.credentials else {
                    return .ready(RequestAuthorization(credentials: state.credentials, generation: state.generation))
                }
                let task: Task<IdentityFetchOutcome, Never>
                switch state.identityTokens.next(now: now, refused: refused) {
                case .send(let token):
                    return .ready(
                        RequestAuthorization(
                            credentials: state.credentials, identityToken: token, generation: state.generation))
                case .fetch(let fetch, let refresh):
                    task = Task { await self.fetchIdentityToken(fetch, refresh: refresh, from: provider) }
                    state.identityFetch = task
                case .wait:
                    guard let fetching = state.identityFetch else {
                        preconditionFailure("Internal inconsistency: an identity token call without its task")
                    }
                    task = fetching
                }
                state.identityWaiters += 1
                return .waiting(task)
            }
            let task: Task<IdentityFetchOutcome, Never>
            switch next {
            case .ready(let authorization): return authorization
            case .waiting(let fetching): task = fetching
            }
            let outcome = await task.value
            withLock { $0.identityWaiters -= 1 }
            // `nil`: the credentials changed during the call; ask under the new ones.
            if let authorization = try outcome.get() { return authorization }
        }
    }

    private enum AuthorizationStep {
        case ready(RequestAuthorization)
        /// Wait for this call of the provider.
        case waiting(Task<IdentityFetchOutcome, Never>)
    }

    /// How many requests wait for the identity token provider's answer.
    var identityTokenWaiters: Int { withLock { $0.identityWaiters } }

    /// Calls the provider, and keeps its answer unless the credentials
    /// changed meanwhile; a new identity is a change of account.
    private func fetchIdentityToken(_ fetch: UInt64, refresh: Bool, from provider: IdentityTokenProvider) async
        -> IdentityFetchOutcome
    {
        let answer: String?
        do {
            answer = try await provider.token(refresh: refresh)
            if let answer { try Self.checkHeaderValue(answer) }
        } catch {
            let current = withLock { state in
                guard state.identityTokens.failed(fetch: fetch) else { return false }
                state.identityFetch = nil
                return true
            }
            guard current else { return .success(nil) }
            guard let cloudError = error as? CloudError else {
                // The type only: an error of the provider might quote a token.
                return .failure(
                    CloudError(
                        .authenticationFailed,
                        reason: "the identity token provider failed (\(type(of: error))); nothing was sent"))
            }
            return .failure(cloudError)
        }
        let (outcome, stopped): (IdentityFetchOutcome, [Task<Void, Never>]) = withLock { state in
            guard case .kept(let token, let changed) = state.identityTokens.fetched(answer, fetch: fetch) else {
                return (.success(nil), [])
            }
            state.identityFetch = nil
            let stopped = changed ? accountChanged(&state) : []
            let authorization = RequestAuthorization(
                credentials: state.credentials, identityToken: token, generation: state.generation)
            return (.success(authorization), stopped)
        }
        for task in stopped { task.cancel() }
        return outcome
    }

    /// Refuses a token that cannot travel in a header as it is (empty, or
    /// holding a byte other than visible ASCII), rather than send it altered.
    private static func checkHeaderValue(_ token: String) throws {
        guard !token.isEmpty, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw CloudError(
                .authenticationFailed,
                reason: "the identity token provider answered text that is not a token; nothing was sent")
        }
    }
}
