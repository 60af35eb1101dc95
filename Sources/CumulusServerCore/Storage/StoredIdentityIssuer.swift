/// An identity provider whose tokens sign users in to one container: the
/// issuer (`iss`) its tokens name, the audiences (`aud`) they must carry,
/// and where its public keys are.
public struct StoredIdentityIssuer: Sendable, Hashable {
    /// The `iss` of the issuer's tokens, compared as exact bytes.
    public var issuer: String
    /// The audiences a token must name one of (an app's bundle ID, a client ID).
    public var audiences: [String]
    /// The URL each server fetches the issuer's key set (JWKS) from, or
    /// `nil` when the key set is stored.
    public var keySetURL: String?
    /// The issuer's key set (JWKS JSON) as stored by `issuer add`, or `nil`
    /// when it is fetched from ``keySetURL``.
    public var keySet: String?

    /// Creates a row; exactly one of `keySetURL` and `keySet` is set.
    public init(issuer: String, audiences: [String], keySetURL: String?, keySet: String?) {
        self.issuer = issuer
        self.audiences = audiences
        self.keySetURL = keySetURL
        self.keySet = keySet
    }
}
