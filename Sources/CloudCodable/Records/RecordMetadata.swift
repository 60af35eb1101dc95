/// What the server says about a stored record: its change tag, zone and the
/// stamps of its creation and last modification.
///
/// A model carries this in ``CloudCodable/cloudMetadata``. It is `nil` until the
/// model has been synced; the sync engine fills it in from the server's answer.
/// The record encoder never writes it as a field: it travels in
/// ``Record/metadata`` instead.
///
/// Metadata is copied with every model and record that carries it, so its
/// values live in one shared, copy-on-write storage: a copy costs one
/// reference count, not one for each of its strings.
public struct RecordMetadata: Sendable, Hashable, Codable {
    /// The values; changed only when this is their one reference.
    ///
    /// (`@unchecked Sendable`: a storage that more than one value holds, and
    /// that other threads may therefore read, is never written; a setter
    /// first copies a storage it does not hold alone.)
    private final class Storage: @unchecked Sendable {
        var changeTag: String
        var zoneID: ZoneID
        var created: RecordStamp?
        var modified: RecordStamp?

        init(changeTag: String, zoneID: ZoneID, created: RecordStamp?, modified: RecordStamp?) {
            self.changeTag = changeTag
            self.zoneID = zoneID
            self.created = created
            self.modified = modified
        }

        func copy() -> Storage {
            Storage(changeTag: changeTag, zoneID: zoneID, created: created, modified: modified)
        }
    }

    private var storage: Storage

    /// The storage, unique, for a change.
    private var uniqueStorage: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            return storage
        }
    }

    /// The server's version tag for the record; it changes on every write.
    /// Updates that carry a stale tag fail with a conflict.
    public var changeTag: String {
        get { storage.changeTag }
        set { uniqueStorage.changeTag = newValue }
    }

    /// The zone the record lives in.
    public var zoneID: ZoneID {
        get { storage.zoneID }
        set { uniqueStorage.zoneID = newValue }
    }

    /// When and by whom the record was created.
    public var created: RecordStamp? {
        get { storage.created }
        set { uniqueStorage.created = newValue }
    }

    /// When and by whom the record was last modified.
    public var modified: RecordStamp? {
        get { storage.modified }
        set { uniqueStorage.modified = newValue }
    }

    /// Creates record metadata.
    public init(
        changeTag: String, zoneID: ZoneID = .defaultZone, created: RecordStamp? = nil,
        modified: RecordStamp? = nil
    ) {
        storage = Storage(changeTag: changeTag, zoneID: zoneID, created: created, modified: modified)
    }

    // MARK: Codable, Equatable and Hashable, as they would be synthesized

    private enum CodingKeys: String, CodingKey {
        case changeTag, zoneID, created, modified
    }

    /// Decodes `{"changeTag": …, "zoneID": …, "created": …, "modified": …}`;
    /// the stamps may be absent.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            changeTag: try container.decode(String.self, forKey: .changeTag),
            zoneID: try container.decode(ZoneID.self, forKey: .zoneID),
            created: try container.decodeIfPresent(RecordStamp.self, forKey: .created),
            modified: try container.decodeIfPresent(RecordStamp.self, forKey: .modified))
    }

    /// Encodes the metadata; absent stamps are left out.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changeTag, forKey: .changeTag)
        try container.encode(zoneID, forKey: .zoneID)
        try container.encodeIfPresent(created, forKey: .created)
        try container.encodeIfPresent(modified, forKey: .modified)
    }

    /// Whether both have the same tag, zone and stamps.
    public static func == (lhs: RecordMetadata, rhs: RecordMetadata) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.changeTag == rhs.changeTag && lhs.zoneID == rhs.zoneID && lhs.created == rhs.created
            && lhs.modified == rhs.modified
    }

    /// Hashes the tag, zone and stamps.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(changeTag)
        hasher.combine(zoneID)
        hasher.combine(created)
        hasher.combine(modified)
    }
}

extension RecordMetadata: CustomReflectable {
    /// The tag, zone and stamps, as for a plain struct (so that `print`,
    /// `dump` and debuggers show the values, not the shared storage).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "changeTag": changeTag, "zoneID": zoneID, "created": created as Any, "modified": modified as Any,
            ],
            displayStyle: .struct)
    }
}
