import CloudCodable
import Foundation

/// A local change that the server has not acknowledged yet.
struct PendingChange: Sendable {
    enum Kind: Sendable {
        /// Save this record; its metadata's change tag is the version the
        /// change was based on (`nil`: never synced, so create it).
        case save(Record)
        /// Delete the record; `baseTag` is the version the deletion was based on.
        case delete(baseTag: String?)
    }

    var kind: Kind
    /// Increases with every local change to the record, so that an
    /// acknowledgement of an older change does not clear a newer one.
    var generation: Int
}

/// What the engine keeps, and how it is spelled in the journal.
///
/// Keys: `meta` (the user, the zone's sync token, whether the zone exists),
/// `server/<name>` (the last server version of a record, the merge
/// ancestor), `save/<name>` and `delete/<name>` (pending changes).
enum JournalKeys {
    static let meta = "meta"
    static let serverPrefix = "server/"
    static let savePrefix = "save/"
    static let deletePrefix = "delete/"

    static func server(_ name: String) -> String { serverPrefix + name }
    static func save(_ name: String) -> String { savePrefix + name }
    static func delete(_ name: String) -> String { deletePrefix + name }
}

/// The engine's metadata document.
struct EngineMeta: Sendable, Equatable {
    var user: String?
    var syncToken: SyncToken?
    var zoneReady = false

    func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.appendRaw("{\"format\":1,\"user\":")
        if let user { writer.appendString(user) } else { writer.appendRaw("null") }
        writer.appendRaw(",\"syncToken\":")
        if let syncToken { writer.appendString(syncToken.rawValue) } else { writer.appendRaw("null") }
        writer.appendRaw(",\"zoneReady\":")
        writer.appendRaw(zoneReady ? "true" : "false")
        writer.append(byte: UInt8(ascii: "}"))
        return writer.bytes
    }

    init(user: String? = nil, syncToken: SyncToken? = nil, zoneReady: Bool = false) {
        self.user = user
        self.syncToken = syncToken
        self.zoneReady = zoneReady
    }

    init(json: [UInt8]) throws {
        guard case .object(let members) = try JSONParser.parse(json) else {
            throw JournalError(.corrupted, file: nil, "the engine's metadata is not an object")
        }
        for member in members {
            switch (member.key, member.value) {
            case ("user", .string(let user)): self.user = user
            case ("syncToken", .string(let token)): syncToken = SyncToken(rawValue: token)
            case ("zoneReady", .bool(let ready)): zoneReady = ready
            case ("format", .number(let version)) where version != "1":
                throw JournalError(.unsupportedVersion, "engine metadata format \(version)")
            default: break
            }
        }
    }
}

/// The pending deletion document: `{"baseTag": …}`.
enum DeleteDocument {
    static func json(baseTag: String?) -> [UInt8] {
        var writer = JSONWriter(capacity: 48)
        writer.appendRaw("{\"baseTag\":")
        if let baseTag { writer.appendString(baseTag) } else { writer.appendRaw("null") }
        writer.append(byte: UInt8(ascii: "}"))
        return writer.bytes
    }

    static func baseTag(_ json: [UInt8]) throws -> String? {
        guard case .object(let members) = try JSONParser.parse(json) else {
            throw JournalError(.corrupted, "a pending deletion is not an object")
        }
        for member in members where member.key == "baseTag" {
            if case .string(let tag) = member.value { return tag }
        }
        return nil
    }
}
