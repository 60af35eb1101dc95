/// A value type that Cumulus can sync: it becomes one ``Record`` in the cloud.
///
/// Conform a `Codable` struct, give it an identifier and a place for the
/// server's metadata, and hand it to a sync engine:
///
/// ```swift
/// struct Note: CloudCodable, Identifiable {
///     var id = UUID()
///     var title: String
///     var cloudMetadata: RecordMetadata?
/// }
/// ```
///
/// `Identifiable` models whose `ID` is a `UUID` or a `String` get
/// ``cloudIdentifier`` for free; ``cloudRecordType`` defaults to the type's
/// name, and ``resolveConflict(client:server:ancestor:)`` to a field-level
/// three-way merge.
public protocol CloudCodable: Codable, Sendable {
    /// The model's identity, which becomes the record's name. It must be
    /// stable for the life of the model and unique among models of its type.
    ///
    /// For a `UUID` identity, make the model `Identifiable` and use the
    /// default rather than returning `id.uuidString`: on Linux, Foundation's
    /// `uuidString` takes about eight times as long as the default's
    /// formatting, and for a small record that is about a fifth of the time
    /// of encoding it.
    var cloudIdentifier: String { get }

    /// What the server last said about this model's record: `nil` until the
    /// model was first synced. The sync engine fills it in; the record encoder
    /// carries it in ``Record/metadata``, never as a field.
    var cloudMetadata: RecordMetadata? { get set }

    /// The record type that models of this type are stored as. Defaults to
    /// the type's name.
    static var cloudRecordType: String { get }

    /// Decides what to upload when the server holds a newer version than the
    /// one a local change was based on.
    ///
    /// - Parameters:
    ///   - client: the local value that the server refused.
    ///   - server: the server's current value, with its metadata.
    ///   - ancestor: the last server version this device saw, when known.
    /// - Returns: the value to upload on top of the server's version, or `nil`
    ///   to accept the server's version and drop the local change.
    ///
    /// The default is a field-level three-way merge: a field changed on one
    /// side only takes that side's value; a field changed on both sides (or
    /// any differing field when there is no ancestor) takes the client's.
    static func resolveConflict(client: Self, server: Self, ancestor: Self?) -> Self?
}
