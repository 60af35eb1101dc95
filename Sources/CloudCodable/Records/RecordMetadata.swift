/// What the server says about a stored record: its change tag, zone and the
/// stamps of its creation and last modification.
///
/// A model carries this in ``CloudCodable/cloudMetadata``. It is `nil` until the
/// model has been synced; the sync engine fills it in from the server's answer.
/// The record encoder never writes it as a field: it travels in
/// ``Record/metadata`` instead.
public struct RecordMetadata: Sendable, Hashable, Codable {
    /// The server's version tag for the record; it changes on every write.
    /// Updates that carry a stale tag fail with a conflict.
    public var changeTag: String
    /// The zone the record lives in.
    public var zoneID: ZoneID
    /// When and by whom the record was created.
    public var created: RecordStamp?
    /// When and by whom the record was last modified.
    public var modified: RecordStamp?

    /// Creates record metadata.
    public init(
        changeTag: String, zoneID: ZoneID = .defaultZone, created: RecordStamp? = nil,
        modified: RecordStamp? = nil
    ) {
        self.changeTag = changeTag
        self.zoneID = zoneID
        self.created = created
        self.modified = modified
    }
}
