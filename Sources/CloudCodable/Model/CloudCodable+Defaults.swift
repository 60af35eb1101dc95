import Foundation

extension CloudCodable {
    /// The type's name, for example `"Note"` for `struct Note`.
    public static var cloudRecordType: String {
        // The runtime caches type names; `String(describing:)` would go
        // through reflection on every record.
        _typeName(Self.self, qualified: false)
    }

    /// No encrypted fields.
    public static var cloudEncryptedFields: Set<String> { [] }

    /// No local-only fields: every field syncs.
    public static var cloudLocalFields: Set<String> { [] }

    /// No field is merged as text: a field both sides changed takes the
    /// client's value.
    public static var cloudTextMergedFields: Set<String> { [] }

    /// No parent: the model stands on its own.
    public var cloudParentIdentifier: String? { nil }

    /// The default conflict resolution: a field-level three-way merge, with
    /// the fields of ``CloudCodable/cloudTextMergedFields`` merged as text.
    /// See ``CloudCodable/resolveConflict(client:server:ancestor:)``.
    public static func resolveConflict(client: Self, server: Self, ancestor: Self?) -> Self? {
        FieldMerge.merge(client: client, server: server, ancestor: ancestor)
    }
}

extension CloudCodable where Self: Identifiable, ID == UUID {
    /// The model's `id` as an upper-case UUID string.
    public var cloudIdentifier: String { UUIDFormatting.string(id) }
}

extension CloudCodable where Self: Identifiable, ID == String {
    /// The model's `id`.
    public var cloudIdentifier: String { id }
}
