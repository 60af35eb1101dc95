/// The identity of a record zone: its name and the user who owns it.
///
/// On the wire a zone ID is `{"zoneName": …, "ownerRecordName": …}`; the
/// owner is omitted for the caller's own zones.
public struct ZoneID: Sendable, Hashable, Codable {
    /// The zone's name, unique within its owner's database.
    public var zoneName: String
    /// The user record name of the zone's owner, or `nil` for the caller's own zone.
    public var ownerRecordName: String?

    /// Creates a zone ID.
    public init(zoneName: String, ownerRecordName: String? = nil) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }

    /// The database's default zone, `_defaultZone`.
    public static let defaultZone = ZoneID(zoneName: "_defaultZone")

    /// CloudKit's owner name for the caller: a zone ID that names it, like
    /// one without an owner, names the caller's own zone.
    public static let callerOwnerName = "__defaultOwner__"

    /// The owner this zone ID names, or `nil` when it names the caller's
    /// own zone (no owner, or ``callerOwnerName``); names compared as bytes.
    public var namedOwner: String? {
        guard let owner = ownerRecordName, !owner.utf8.elementsEqual(Self.callerOwnerName.utf8) else { return nil }
        return owner
    }
}
