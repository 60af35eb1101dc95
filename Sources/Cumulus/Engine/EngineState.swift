import CloudCodable
import CloudProtocol
import Foundation

/// A local change that the server has not acknowledged yet.
struct PendingChange: Sendable {
    enum Kind: Sendable {
        /// Save this record; its metadata's change tag is the version the
        /// change was based on (`nil`: never synced, so create it).
        case save(Record)
        /// Delete the record; `baseTag` is the version the deletion was
        /// based on (`nil`: delete whatever the server holds).
        case delete(baseTag: String?)
    }

    var kind: Kind
    /// Increases with every local change to the record, so that an
    /// acknowledgement of an older change does not clear a newer one.
    var generation: Int

    /// The change tag of the version the change was based on.
    var baseTag: String? {
        switch kind {
        case .save(let record): record.changeTag
        case .delete(let baseTag): baseTag
        }
    }
}

/// A change that was sent and not answered: the server may or may not
/// have applied it, so it is settled against the server, never assumed
/// unsent. A record can have several, when the answers to several sends
/// were lost.
struct SentWrite: Sendable {
    enum Kind: Sendable {
        /// A save of this record (its fields are how the engine recognises
        /// its own write when it comes back).
        case save(Record)
        case delete
    }

    var kind: Kind
    /// The generation of the local change that was sent.
    var generation: Int
}

/// A version of a record that a later one replaced, kept so that a merge of
/// a model based on it has its true ancestor.
struct EarlierVersion: Sendable {
    var tag: String
    /// The record as wire JSON.
    var json: [UInt8]
}

/// What the engine keeps, and how it is spelled in the journal.
///
/// Keys: `meta` (the user, the zone's sync token, whether the zone exists),
/// `server/<name>` (the last server version of a record), `earlier/<name>`
/// (earlier server versions, newest first, for merges), `save/<name>` and
/// `delete/<name>` (pending changes), `sent/<name>` and `sentDelete/<name>`
/// (changes sent and not answered, other than the pending one: in doubt).
///
/// A pending save is kept under `write/<name>`, stamped with its write
/// identifier when it is queued, and a pending deletion under
/// `delete/<name>`: after a crash either may have been sent, so both count
/// as in doubt, and sending them writes nothing more. `save/<name>` is a
/// pending save of format 2, queued without an identifier: it is stamped,
/// and written again, before it is sent.
enum JournalKeys {
    static let meta = "meta"
    static let serverPrefix = "server/"
    static let earlierPrefix = "earlier/"
    static let writePrefix = "write/"
    static let savePrefix = "save/"
    static let deletePrefix = "delete/"
    static let sentPrefix = "sent/"
    static let sentDeletePrefix = "sentDelete/"
    /// A pending change a share refused (`ACCESS_DENIED`), or the server for
    /// a dangling `VALIDATE` reference: not sent again, after a restart
    /// too, until the app changes the model, the share changes or the
    /// reference's target appears (an engine that predates it ignores the
    /// document and sends the change again).
    static let refusedPrefix = "refused/"
    /// A server version that did not decode as the model: reported once, and
    /// published when an engine whose model decodes it opens the journal.
    static let undecodablePrefix = "undecodable/"
    /// The values of a record's local-only fields
    /// (``CloudCodable/cloudLocalFields``), as a record of those fields
    /// alone: never sent. An engine that predates them keeps the document
    /// without reading it.
    static let localPrefix = "local/"

    static func server(_ name: String) -> String { serverPrefix + name }
    static func earlier(_ name: String) -> String { earlierPrefix + name }
    static func write(_ name: String) -> String { writePrefix + name }
    static func save(_ name: String) -> String { savePrefix + name }
    static func delete(_ name: String) -> String { deletePrefix + name }
    static func sent(_ name: String) -> String { sentPrefix + name }
    static func sentDelete(_ name: String) -> String { sentDeletePrefix + name }
    static func refused(_ name: String) -> String { refusedPrefix + name }
    static func undecodable(_ name: String) -> String { undecodablePrefix + name }
    static func local(_ name: String) -> String { localPrefix + name }
}

/// Why the server refused a pending change: `{"code": …, "reason": …}`.
enum RefusedDocument {
    static func json(_ error: CloudError) -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + error.reason.utf8.count)
        writer.appendRaw("{\"code\":")
        writer.appendString(error.code.rawValue)
        writer.appendRaw(",\"reason\":")
        writer.appendString(error.reason)
        writer.append(byte: UInt8(ascii: "}"))
        return writer.bytes
    }

    static func error(_ json: [UInt8], recordName: String, zoneID: ZoneID) throws -> CloudError {
        guard case .object(let members) = try JSONParser.parse(json) else {
            throw JournalError(.corrupted, "a refused change's document is not an object")
        }
        var code: String?
        var reason = ""
        for member in members {
            switch (member.key, member.value) {
            case ("code", .string(let value)): code = value
            case ("reason", .string(let value)): reason = value
            default: continue
            }
        }
        guard let code else { throw JournalError(.corrupted, "a refused change's document has no code") }
        return CloudError(CloudError.Code(rawValue: code), reason: reason, recordName: recordName, zoneID: zoneID)
    }
}

/// The engine's metadata document. A journal written before `fetched`
/// existed reads as not fetched, until the next complete fetch.
struct EngineMeta: Sendable, Equatable {
    /// Format 2 added the in-doubt and earlier-version documents; a format 1
    /// journal simply has none. Format 3 keeps pending saves stamped under
    /// `write/`, which an engine of format 2 would not see: it refuses the
    /// journal instead of dropping them.
    static let format = 3

    var user: String?
    var syncToken: SyncToken?
    var zoneReady = false
    /// Whether a fetch of the account's zone went to its end: until then
    /// the replica may lack records the server has.
    var fetched = false
    /// The epoch of the zone's marker when the engine last created or found
    /// it (engines whose zone may hold other record types; see ``ZoneMarker``).
    var zoneEpoch: String?
    /// The public database without a change feed (see ``PublicFetch``): the
    /// newest modification time, in server milliseconds, that the engine's
    /// queries applied.
    var queryTime: Int64?
    /// When the engine last learned every record name of its type in the
    /// public database, in milliseconds since 1970 on this device's clock.
    var scanTime: Int64?
    /// The format the document was read in (``format`` once written).
    var format = Self.format

    func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 96)
        writer.appendRaw("{\"format\":")
        writer.appendInt(Int64(Self.format))
        writer.appendRaw(",\"user\":")
        if let user { writer.appendString(user) } else { writer.appendRaw("null") }
        writer.appendRaw(",\"syncToken\":")
        if let syncToken { writer.appendString(syncToken.rawValue) } else { writer.appendRaw("null") }
        writer.appendRaw(",\"zoneReady\":")
        writer.appendRaw(zoneReady ? "true" : "false")
        writer.appendRaw(",\"fetched\":")
        writer.appendRaw(fetched ? "true" : "false")
        if let zoneEpoch {
            writer.appendRaw(",\"zoneEpoch\":")
            writer.appendString(zoneEpoch)
        }
        if let queryTime {
            writer.appendRaw(",\"queryTime\":")
            writer.appendInt(queryTime)
        }
        if let scanTime {
            writer.appendRaw(",\"scanTime\":")
            writer.appendInt(scanTime)
        }
        writer.append(byte: UInt8(ascii: "}"))
        return writer.bytes
    }

    init(user: String? = nil, syncToken: SyncToken? = nil, zoneReady: Bool = false, fetched: Bool = false) {
        self.user = user
        self.syncToken = syncToken
        self.zoneReady = zoneReady
        self.fetched = fetched
    }

    init(json: [UInt8]) throws {
        guard case .object(let members) = try JSONParser.parse(json) else {
            throw JournalError(.corrupted, file: nil, "the engine's metadata is not an object")
        }
        format = 1
        for member in members {
            switch (member.key, member.value) {
            case ("user", .string(let user)): self.user = user
            case ("syncToken", .string(let token)): syncToken = SyncToken(rawValue: token)
            case ("zoneReady", .bool(let ready)): zoneReady = ready
            case ("fetched", .bool(let fetched)): self.fetched = fetched
            case ("zoneEpoch", .string(let epoch)): zoneEpoch = epoch
            case ("queryTime", .number(let time)): queryTime = Int64(time)
            case ("scanTime", .number(let time)): scanTime = Int64(time)
            case ("format", .number(let version)):
                guard let known = Int(version), (1...Self.format).contains(known) else {
                    throw JournalError(.unsupportedVersion, "engine metadata format \(version)")
                }
                format = known
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

/// A document that is a JSON array of wire records: the earlier versions
/// of a record (newest first) and the saves in doubt (oldest first).
enum RecordListDocument {
    static func json(_ records: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (index, record) in records.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: record)
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    /// The records, each with its JSON; every one must be the record named `name`.
    static func records(_ json: [UInt8], key: String, name: String) throws -> [(record: Record, json: [UInt8])] {
        var records: [(record: Record, json: [UInt8])] = []
        do {
            try WireBodyReader.read(json) { reader in
                if try reader.enterArray("a list of records") {
                    repeat {
                        let bytes = Array(json[try reader.rawValueRange()])
                        records.append((try WireFormat.decodeRecord(from: bytes), bytes))
                    } while try reader.nextElement()
                }
                try reader.expectEnd()
            }
        } catch {
            throw JournalError(.corrupted, "the journal entry \(key) is not a list of records: \(error)")
        }
        // Compared as strings, as the engine's tables compare names.
        for entry in records where entry.record.recordName != name {
            throw JournalError(.corrupted, "the journal entry \(key) holds the record '\(entry.record.recordName)'")
        }
        return records
    }
}
