/// A link from one record to another: the `REFERENCE` field type.
///
/// On the wire: `{"recordName": …, "zoneID": …, "action": "NONE" | "DELETE_SELF" | "VALIDATE"}`.
public struct Reference: Sendable, Hashable, Codable {
    /// What the server does with the referring record when the target changes.
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// Nothing: the reference may dangle.
        case none = "NONE"
        /// Deleting the target deletes the record that holds this reference.
        case deleteSelf = "DELETE_SELF"
        /// The target must exist when the referring record is saved.
        case validate = "VALIDATE"
    }

    /// The name of the record referred to.
    public var recordName: String
    /// The zone of the record referred to; `nil` means the referring record's zone.
    public var zoneID: ZoneID?
    /// What happens when the target is deleted.
    public var action: Action

    /// Creates a reference.
    public init(recordName: String, zoneID: ZoneID? = nil, action: Action = .none) {
        self.recordName = recordName
        self.zoneID = zoneID
        self.action = action
    }
}
