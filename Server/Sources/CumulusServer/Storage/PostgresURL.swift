import CloudCodable
import CloudProtocol
import Foundation
import PostgresNIO

/// Where a PostgreSQL server is, parsed from a connection URL such as
/// `postgres://cumulus:secret@db.example.com:5432/cumulus?sslmode=require`.
///
/// The scheme is `postgres` or `postgresql`; the user is required; the port
/// defaults to 5432 and the database to the user's name. `sslmode` is
/// `disable`, `prefer` (the default: TLS when the server offers it) or
/// `require`.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    /// How the connection uses TLS.
    public enum TLSMode: String, Sendable, Hashable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS or no connection.
        case require
    }

    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The role to connect as.
    public var username: String
    /// The role's password, if it has one.
    public var password: String?
    /// The database's name.
    public var database: String
    /// How the connection uses TLS.
    public var tls: TLSMode

    /// Parses a connection URL.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) naming what is wrong; the
    ///   message never repeats the password.
    public init(_ text: String) throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme.lowercased())
        else {
            throw CloudError(.badRequest, reason: "a PostgreSQL URL starts with postgres:// or postgresql://")
        }
        guard let host = components.host, !host.isEmpty else {
            throw CloudError(.badRequest, reason: "the PostgreSQL URL names no host")
        }
        guard let user = components.user, !user.isEmpty else {
            throw CloudError(.badRequest, reason: "the PostgreSQL URL names no user")
        }
        self.host = host
        port = components.port ?? 5432
        username = user.removingPercentEncoding ?? user
        password = components.password.map { $0.removingPercentEncoding ?? $0 }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? username : (path.removingPercentEncoding ?? path)
        tls = .prefer
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                switch item.value {
                case "disable": tls = .disable
                case "allow", "prefer": tls = .prefer
                case "require", "verify-ca", "verify-full": tls = .require
                default:
                    throw CloudError(
                        .badRequest, reason: "the PostgreSQL URL's sslmode '\(item.value ?? "")' is unknown")
                }
            default:
                throw CloudError(.badRequest, reason: "the PostgreSQL URL's parameter '\(item.name)' is unknown")
            }
        }
    }

    /// The URL without its password, for logs.
    public var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)"
    }

    /// The configuration of a connection pool to this server.
    public var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(.makeClientConfiguration())
            case .require: .require(.makeClientConfiguration())
            }
        return PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
    }

    /// The configuration of one connection to this server (a `LISTEN`
    /// connection, which a pool would not keep).
    public func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS =
            switch self.tls {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        return PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls)
    }
}
