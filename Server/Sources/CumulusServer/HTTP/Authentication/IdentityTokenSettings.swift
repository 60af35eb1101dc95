/// How the server checks identity tokens (JWT) and keeps its issuers' keys.
///
/// Issuers are configured per container in storage (`cumulus issuer add`);
/// these settings are each server's own.
public struct IdentityTokenSettings: Sendable {
    /// How far a token's `exp` and `nbf` may be from the server's clock
    /// (``ServerConfiguration/now``): clock skew between the issuer and the server.
    public var clockSkewLeeway: Duration
    /// How long a server keeps a container's issuers before reading them
    /// again: the longest an `issuer add` or `issuer remove` takes to reach
    /// every server, cached tokens included.
    public var issuerRefreshInterval: Duration
    /// How long a key set fetched from an issuer's JWKS URL is used before
    /// it is fetched again.
    public var keySetRefreshInterval: Duration
    /// The least time between two fetches of one JWKS URL, for a token
    /// naming a key (`kid`) the set does not hold, or after a failed fetch.
    public var minimumKeySetFetchInterval: Duration
    /// The longest a whole fetch of a JWKS URL may take: connecting, the
    /// answer's head and its body. A URL that never answers, or drips its
    /// answer, holds the sign-ins of its issuer no longer than this.
    public var keySetFetchTimeout: Duration
    /// The largest JWKS document accepted, in bytes: a fetch reads no
    /// further, however much the URL sends.
    public var maximumKeySetSize: Int

    /// Creates settings; the defaults suit issuers such as Sign in with Apple.
    public init(
        clockSkewLeeway: Duration = .seconds(60), issuerRefreshInterval: Duration = .seconds(10),
        keySetRefreshInterval: Duration = .seconds(600), minimumKeySetFetchInterval: Duration = .seconds(60),
        keySetFetchTimeout: Duration = .seconds(10), maximumKeySetSize: Int = 1024 * 1024
    ) {
        self.clockSkewLeeway = clockSkewLeeway
        self.issuerRefreshInterval = issuerRefreshInterval
        self.keySetRefreshInterval = keySetRefreshInterval
        self.minimumKeySetFetchInterval = minimumKeySetFetchInterval
        self.keySetFetchTimeout = keySetFetchTimeout
        self.maximumKeySetSize = maximumKeySetSize
    }
}
