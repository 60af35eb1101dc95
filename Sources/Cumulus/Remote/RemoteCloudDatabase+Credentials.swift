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

        /// The kind of credentials, with every token redacted.
        public var description: String {
            switch self {
            case .user(_, let webAuthToken):
                "user(apiToken: <redacted>, webAuthToken: \(webAuthToken == nil ? "nil" : "<redacted>"))"
            case .serverKey(let apiToken, let signer):
                "serverKey(apiToken: \(apiToken == nil ? "nil" : "<redacted>"), keyID: \(signer.keyID))"
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
            }
        }

        /// The API token sent as `ckAPIToken`, if any.
        var apiToken: String? {
            switch self {
            case .user(let apiToken, _): apiToken
            case .serverKey(let apiToken, _): apiToken
            }
        }
    }

    /// The account that credentials act for; never printed (it holds a token).
    enum Account: Hashable {
        case user(webAuthToken: String?)
        case serverKey(keyID: String)
    }
}
