import Foundation

/// How `cumulus serve --console` runs the operator's console under
/// `/console/`: where its tokens are and how long a sign-in lasts.
public struct ConsoleConfiguration: Sendable {
    /// The file of console tokens (see ``ConsoleTokenStore``); read on
    /// every sign-in and every page, so that the `cumulus` command's
    /// changes take effect at once.
    public var tokenFile: String
    /// The longest a session lasts from its sign-in.
    public var sessionLifetime: Duration
    /// How long a session lasts with no page asked.
    public var sessionIdleLimit: Duration
    /// The most sessions kept at once; signing in beyond it ends the oldest.
    public var maximumSessions: Int
    /// The clock of sessions, moved by tests.
    public var now: @Sendable () -> Date

    /// Creates a configuration: sessions of at most 8 hours, ended after
    /// 30 minutes without a page.
    public init(
        tokenFile: String, sessionLifetime: Duration = .seconds(8 * 3600), sessionIdleLimit: Duration = .seconds(1800),
        maximumSessions: Int = 1000, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.tokenFile = tokenFile
        self.sessionLifetime = sessionLifetime
        self.sessionIdleLimit = sessionIdleLimit
        self.maximumSessions = maximumSessions
        self.now = now
    }

    /// The token file's name in a data directory.
    public static let tokenFileName = "console-tokens.json"
}
