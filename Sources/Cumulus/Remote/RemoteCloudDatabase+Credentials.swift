extension RemoteCloudDatabase {
    /// Who the requests are sent as.
    ///
    /// Tokens never appear in a description, a log or an error: printing
    /// credentials shows which kind they are and nothing secret.
    public enum Credentials: Sendable, CustomStringConvertible, CustomReflectable {
        /// A user of an app: the container's API token, and the user's web
        /// auth token once signed in (`nil` when signed out). Both travel in
        /// the query as `ckAPIToken` and `ckWebAuthToken`.
        case user(apiToken: String, webAuthToken: String?)
        /// A server-to-server key (the public database only): each request is
        /// signed by `signer`. The API token, when given, travels as `ckAPIToken`.
        case serverKey(apiToken: String?, signer: any CloudRequestSigner)
        /// A user signed in with an identity provider (Sign in with Apple, an
        /// OpenID Connect provider): the container's API token travels in
        /// the query as `ckAPIToken`, and the identity token `token` gives
        /// (a JSON Web Token) in the header `Authorization: Bearer <token>`.
        ///
        /// ```swift
        /// let credentials = RemoteCloudDatabase.Credentials.identity(
        ///     apiToken: apiToken,
        ///     token: IdentityTokenProvider { refresh in
        ///         if refresh { try await signIn.renew() }
        ///         return await signIn.identityToken  // nil while signed out
        ///     })
        /// ```
        ///
        /// The database keeps the last token and asks `token` for another
        /// when it expires within a minute (its `exp` claim, read without
        /// verifying the token: the server verifies it), or once when the
        /// server refuses it with `AUTHENTICATION_FAILED`; the request is then
        /// sent again if the token changed. Concurrent requests share one
        /// call of `token`. A `nil` answer is not kept: while nobody is
        /// signed in, each request asks again, so a sign-in is seen by the
        /// next request.
        ///
        /// The account changes when a token's issuer and subject (`iss`,
        /// `sub`, compared as exact bytes) differ from the last token's, or
        /// on signing in or out; a token whose
        /// subject cannot be read counts as an account of its own, and is
        /// still sent for the server to judge. To have a sign-out (or a
        /// switch of user) seen before the kept token expires, set the
        /// credentials again (``RemoteCloudDatabase/setCredentials(_:)``):
        /// the database forgets the token and asks `token` at the next request.
        case identity(apiToken: String, token: IdentityTokenProvider)

        /// The kind of credentials, with every token redacted.
        public var description: String {
            switch self {
            case .user(_, let webAuthToken):
                "user(apiToken: <redacted>, webAuthToken: \(webAuthToken == nil ? "nil" : "<redacted>"))"
            case .serverKey(let apiToken, let signer):
                "serverKey(apiToken: \(apiToken == nil ? "nil" : "<redacted>"), keyID: \(signer.keyID))"
            case .identity:
                "identity(apiToken: <redacted>, token: <provider>)"
            }
        }

        /// The description alone, so that `dump` and debuggers show no token either.
        public var customMirror: Mirror {
            Mirror(self, children: ["credentials": description], displayStyle: .enum)
        }

        /// Who these credentials act as: a change of it is a change of account.
        var account: Account {
            switch self {
            case .user(_, let webAuthToken): .user(webAuthToken: webAuthToken)
            case .serverKey(_, let signer): .serverKey(keyID: signer.keyID)
            // Whom the tokens speak for is learned from each token (`IdentityTokenState`).
            case .identity: .identity
            }
        }

        /// The API token sent as `ckAPIToken`, if any.
        var apiToken: String? {
            switch self {
            case .user(let apiToken, _): apiToken
            case .serverKey(let apiToken, _): apiToken
            case .identity(let apiToken, _): apiToken
            }
        }
    }

    /// The account that credentials act for; never printed (it holds a token).
    enum Account: Hashable {
        case user(webAuthToken: String?)
        case serverKey(keyID: String)
        case identity
    }
}
