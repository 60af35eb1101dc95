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
/// three-way merge. Text that two devices may edit at once (a caption, a
/// note's body) can be merged line by line and word by word instead of one
/// side winning: name its fields in ``cloudTextMergedFields``.
///
/// A model that stands for one real thing (a tag by its name, a day) can
/// take its identifier from what makes it unique, so that two devices
/// creating it make one record: see ``CloudIdentifier``.
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

    /// The fields (record field names, the coding keys) that the server must
    /// never read: a sync engine encrypts them on the device before they are
    /// sent and decrypts them as they arrive. Defaults to none.
    ///
    /// An asset or a reference cannot be encrypted (the server reads
    /// them), and a query cannot filter or sort by an encrypted field.
    static var cloudEncryptedFields: Set<String> { get }

    /// The fields (record field names, the coding keys) that never leave
    /// the device: a downloaded file's local path, a draft, the state of
    /// the interface. A sync engine keeps them in its journal, puts them
    /// back onto the versions that arrive from the server, never sends
    /// them, and does not count a change of them alone as a change to
    /// sync. Defaults to none.
    ///
    /// A version from the server that this device has no local values for
    /// (another device created it) decodes without them, so give these
    /// properties a default: make them optional, or decode a missing one
    /// as a default value.
    static var cloudLocalFields: Set<String> { get }

    /// The fields whose text the default
    /// ``resolveConflict(client:server:ancestor:)`` merges when both sides
    /// changed them, rather than taking the client's value: the record field
    /// names (the coding keys) of `String` properties. Empty by default.
    ///
    /// ```swift
    /// struct Photo: CloudCodable, Identifiable {
    ///     static var cloudTextMergedFields: Set<String> { ["caption"] }
    ///     var id: UUID
    ///     var caption: String
    ///     var cloudMetadata: RecordMetadata?
    /// }
    /// ```
    ///
    /// Such a field merges as ``TextMerge/merge(ancestor:client:server:)``
    /// describes when the ancestor is known and the field is a string on all
    /// three sides; otherwise (a field one side cleared, a merge without an
    /// ancestor) the default rule decides. The field is an ordinary STRING
    /// on the wire (sealed like any other when it is also among
    /// ``cloudEncryptedFields``: the merge works on the text in clear). A
    /// resolver of your own can call ``TextMerge`` itself.
    static var cloudTextMergedFields: Set<String> { get }

    /// The ``cloudIdentifier`` of the model this one belongs under, in the
    /// same zone (a photo's album), or `nil` (the default).
    ///
    /// It becomes the record's ``Record/parent``: a system field of the
    /// record, not a custom reference field, so a share of the parent covers
    /// this model too. Decoding ignores it; keep it in a property of your own:
    ///
    /// ```swift
    /// struct Photo: CloudCodable, Identifiable {
    ///     var id: String
    ///     var albumID: String
    ///     var cloudMetadata: RecordMetadata?
    ///     var cloudParentIdentifier: String? { albumID }
    /// }
    /// ```
    ///
    /// Deleting the parent does not delete its children.
    var cloudParentIdentifier: String? { get }

    /// Decides what to upload when a newer version of the record exists than
    /// the one a local change was based on.
    ///
    /// The sync engine calls it when the server refuses a change as stale,
    /// and when an upload is based on an older version than the device
    /// already holds (a copy kept while another device's edit arrived). It
    /// runs on the engine, so keep it quick and free of side effects.
    ///
    /// - Parameters:
    ///   - client: the local value: the model as the app uploaded it (or
    ///     as an earlier resolution left it).
    ///   - server: the newer value, with its metadata: the server's current
    ///     version, or the change already queued on this device.
    ///   - ancestor: the version the local change was based on: the one
    ///     whose change tag the uploaded model carried in ``cloudMetadata``.
    ///     That is not simply the last version the device fetched, which may
    ///     be newer than the copy the app edited. `nil` when it is not known:
    ///     a model without metadata for a record that exists, or a version
    ///     older than those the engine keeps (the engine reports it).
    /// - Returns: the value to upload on top of `server`, or `nil` to accept
    ///   `server` and drop the local change.
    ///
    /// The default is a field-level three-way merge: a field changed on one
    /// side only takes that side's value; a field changed on both sides
    /// takes the client's, except a field named in
    /// ``cloudTextMergedFields``, which takes both sides' text merged with
    /// ``TextMerge`` (when it is a string on all three sides). Fields are
    /// compared as they encode: equal values encode to equal fields (nested
    /// JSON has its keys sorted, sets their elements), so only real edits
    /// count as changes.
    ///
    /// Without an ancestor, it depends on where the client's value came
    /// from. One without ``cloudMetadata`` never saw a version of the
    /// record: two devices created the same record name (see
    /// ``CloudIdentifier``), so the merge treats the ancestor as a record
    /// with no fields: a field only one side set keeps its value, and a
    /// field both set differently takes the client's (text included).
    /// Fields such a value leaves out (`nil` optionals) therefore never
    /// clear the server's. A client value with metadata whose ancestor is
    /// no longer known takes the client's value for every field that
    /// differs.
    static func resolveConflict(client: Self, server: Self, ancestor: Self?) -> Self?
}
