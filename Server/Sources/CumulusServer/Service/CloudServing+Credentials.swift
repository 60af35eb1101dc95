import CloudCodable
import CloudProtocol
import Foundation

/// What the store found a credential to be.
public enum CredentialFinding<Subject: Sendable>: Sendable {
    /// It works, for `subject`, until `until` (`nil`: until it is taken away).
    case valid(Subject, until: Date?)
    /// It was known, and its time is over.
    case expired
    /// No such credential.
    case unknown
}

/// A value of ``CloudServing/credentialsVersion()``: the changes this
/// service made or heard of, and the storage's credentials epoch.
public struct CredentialsVersion: Sendable, Hashable {
    /// The credential changes this service made or was told of.
    public var local: UInt64
    /// The storage's epoch, for a storage another process may write (SQLite); `0` otherwise.
    public var stored: Int64

    /// Creates a version.
    public init(local: UInt64, stored: Int64) {
        self.local = local
        self.stored = stored
    }
}

extension CloudServing {
    /// ``CloudServing/authenticateContainer(named:apiToken:)``, valid without an end.
    public func authenticateAPIToken(_ apiToken: String, container: String) async throws -> CredentialFinding<Void> {
        try await authenticateContainer(named: container, apiToken: apiToken) ? .valid((), until: nil) : .unknown
    }

    /// ``CloudServing/user(container:webAuthToken:)``, valid without an end.
    public func authenticateWebAuthToken(_ webAuthToken: String, container: String) async throws
        -> CredentialFinding<String>
    {
        guard let user = try await user(container: container, webAuthToken: webAuthToken) else { return .unknown }
        return .valid(user, until: nil)
    }

    /// Always the same: a service whose credentials never change.
    public func credentialsVersion() async throws -> CredentialsVersion {
        CredentialsVersion(local: 0, stored: 0)
    }
}
