import Cumulus

/// A note as the simulator sees it: every field any version of the app
/// declares (``SimNoteV1``, ``SimNoteV2``, ``SimNoteV3``), each edited
/// independently, so that a merge that takes the wrong side for one field
/// shows up as a lost edit of that field. Devices sync one of the versions;
/// this type reads the server's records whole and carries the versions'
/// models through the simulator (a field the version does not declare is `nil`).
///
/// Identifiers name the user who created the record (`"alice-7"`), which is
/// how the simulator tells that a record reached another user's database.
struct SimNote: CloudCodable, Identifiable, Hashable {
    var id: String
    var title: String
    /// Declared by versions 1 and 2; version 3 removed it.
    var body: String?
    var count: Int
    /// Never empty: an empty list and an absent field must not be confused.
    var tags: [String]
    /// Added by version 2 (optional), required by version 3. The simulation
    /// never writes 0, version 3's default for a record without it.
    var rating: Int? = nil
    /// Every version's local-only field: the device's own value, which
    /// the server never holds and other devices never see. Not part of
    /// ``content``, since devices legitimately differ on it.
    var mark: String? = nil
    var cloudMetadata: RecordMetadata?

    init(
        id: String, title: String, body: String?, count: Int, tags: [String], rating: Int? = nil,
        mark: String? = nil, cloudMetadata: RecordMetadata? = nil
    ) {
        self.id = id
        self.title = title
        self.body = body
        self.count = count
        self.tags = tags
        self.rating = rating
        self.mark = mark
        self.cloudMetadata = cloudMetadata
    }

    /// The user whose identifier prefixes `identifier`.
    static func owner(of identifier: String) -> String {
        String(identifier.prefix { $0 != "-" })
    }

    /// What two replicas must agree on: the fields and the change tag.
    var content: SimContent {
        SimContent(
            fields: SimField.allCases.map { $0.value(of: self) }, changeTag: cloudMetadata?.changeTag)
    }
}

/// A record's fields and change tag, compared between devices and the server.
struct SimContent: Hashable, CustomStringConvertible {
    var fields: [String]
    var changeTag: String?

    var description: String { "\(fields.joined(separator: " | ")) @\(changeTag ?? "nil")" }
}

/// One of the independently edited fields of a ``SimNote``, with its value
/// spelled as a string so that the oracle can keep one kind of multiset.
enum SimField: String, CaseIterable, Sendable, Hashable {
    case title, body, count, tags, rating

    /// How the oracle spells a field without a value.
    static let absent = "∅"

    /// The field's value as the oracle compares it; ``absent`` for none.
    func value(of note: SimNote) -> String {
        switch self {
        case .title: note.title
        case .body: note.body ?? Self.absent
        case .count: String(note.count)
        case .tags: note.tags.joined(separator: ",")
        case .rating: note.rating.map(String.init) ?? Self.absent
        }
    }

    /// Sets the field from a value made by ``value(of:)`` or ``fresh(_:)``.
    func set(_ value: String, on note: inout SimNote) {
        switch self {
        case .title: note.title = value
        case .body: note.body = value == Self.absent ? nil : value
        case .count:
            guard let count = Int(value) else { preconditionFailure("Internal inconsistency: count '\(value)'") }
            note.count = count
        case .tags: note.tags = value.split(separator: ",").map(String.init)
        case .rating:
            guard value == Self.absent || Int(value) != nil else {
                preconditionFailure("Internal inconsistency: rating '\(value)'")
            }
            note.rating = Int(value)
        }
    }

    /// A value nobody used before: `serial` is unique within a history.
    /// `writer` marks the value as theirs (the count and rating stay numbers).
    func fresh(_ serial: Int, writer: String? = nil) -> String {
        let mark = writer.map { "~\($0)" } ?? ""
        return switch self {
        case .title: "T\(serial)\(mark)"
        case .body: "B\(serial)\(mark)"
        case .count, .rating: String(serial)
        case .tags: "G\(serial)\(mark),H\(serial)\(mark)"
        }
    }
}
