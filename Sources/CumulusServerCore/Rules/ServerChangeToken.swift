import CloudCodable
import CloudProtocol

/// A sync token's contents: `z<incarnation>-<serial>` for zones,
/// `d<incarnation>-<serial>` for databases, the same for every store.
///
/// Incarnations are random, so that tokens stay valid across restarts and
/// several servers without a shared counter, and a recreated zone never
/// takes an earlier incarnation back.
struct ServerChangeToken: Sendable, Hashable {
    enum Kind: Character, Sendable {
        case zone = "z"
        case database = "d"
    }

    var kind: Kind
    var incarnation: Int64
    var serial: Int64

    init(kind: Kind, incarnation: Int64, serial: Int64) {
        self.kind = kind
        self.incarnation = incarnation
        self.serial = serial
    }

    /// Reads a token the server wrote; `nil` for anything else.
    init?(_ token: SyncToken, kind: Kind) {
        let text = token.rawValue
        guard text.first == kind.rawValue else { return nil }
        let parts = text.dropFirst().split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let incarnation = Int64(parts[0]), let serial = Int64(parts[1]),
            incarnation >= 0, serial >= 0
        else { return nil }
        self.init(kind: kind, incarnation: incarnation, serial: serial)
    }

    var syncToken: SyncToken {
        SyncToken(rawValue: "\(kind.rawValue)\(incarnation)-\(serial)")
    }

    /// Incarnations are below 2^53, so that they fit any JSON number.
    static let incarnationBound: Int64 = 1 << 53

    /// A new incarnation: random in `1..<incarnationBound`.
    static func makeIncarnation() -> Int64 {
        Int64.random(in: 1..<incarnationBound)
    }
}

extension StoredZone {
    var syncToken: SyncToken {
        ServerChangeToken(kind: .zone, incarnation: incarnation, serial: serial).syncToken
    }
}

extension StoredDatabase {
    var syncToken: SyncToken {
        ServerChangeToken(kind: .database, incarnation: incarnation, serial: serial).syncToken
    }
}
