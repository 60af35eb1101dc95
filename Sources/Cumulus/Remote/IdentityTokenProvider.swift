/// Where ``RemoteCloudDatabase`` gets the identity token of the signed-in
/// user: a JSON Web Token from the app's identity provider, such as the
/// `identityToken` of Sign in with Apple, for
/// ``RemoteCloudDatabase/Credentials/identity(apiToken:token:)``.
///
/// The database calls the closure before a request when it holds no token,
/// or with `refresh` set when the token it holds expires within a minute or
/// the server refused it (`AUTHENTICATION_FAILED`); concurrent requests share
/// one call. Return the token, or `nil` while nobody is signed in (requests
/// then go out with the API token alone). With `refresh` set, return a token
/// newer than the last one if the provider can give one.
///
/// ```swift
/// let provider = IdentityTokenProvider { refresh in
///     if refresh { try await signIn.renew() }  // the app's own sign-in state
///     return await signIn.identityToken  // nil while signed out
/// }
/// ```
///
/// A closure that throws fails the request without sending it: a
/// ``CloudError`` it throws reaches the caller as it is (throw one with
/// ``CloudError/Code/networkFailure`` to have the sync engine retry later),
/// any other error becomes ``CloudError/Code/authenticationFailed`` naming
/// only the error's type.
public struct IdentityTokenProvider: Sendable {
    private let body: @Sendable (_ refresh: Bool) async throws -> String?

    /// A provider that calls `token` for each token it needs.
    ///
    /// - Parameter token: Answers the signed-in user's identity token, or
    ///   `nil` when nobody is signed in; `refresh` asks for a newer one
    ///   than the last.
    public init(_ token: @escaping @Sendable (_ refresh: Bool) async throws -> String?) {
        body = token
    }

    /// Asks the closure for the identity token of the moment.
    ///
    /// - Parameter refresh: Whether the last token is expiring or was
    ///   refused, so that a newer one is needed.
    public func token(refresh: Bool) async throws -> String? {
        try await body(refresh)
    }
}
