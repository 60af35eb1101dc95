import Foundation

/// How `cumulus serve --console` runs the operator's console under
/// `/console/`: how long a sign-in lasts. Its tokens are in the store
/// (``CloudService/addConsoleToken(label:)``).
public struct ConsoleConfiguration: Sendable {
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
        sessionLifetime: Duration = .seconds(8 * 3600), sessionIdleLimit: Duration = .seconds(1800),
        maximumSessions: Int = 1000, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.sessionLifetime = sessionLifetime
        self.sessionIdleLimit = sessionIdleLimit
        self.maximumSessions = maximumSessions
        self.now = now
    }
}
