import Cumulus

/// The model the simulation syncs: four fields that devices edit
/// independently, so that a merge that takes the wrong side for one field
/// shows up as a lost edit of that field.
///
/// Identifiers name the user who created the record (`"alice-7"`), which is
/// how the simulator tells that a record reached another user's database.
struct SimNote: CloudCodable, Identifiable, Hashable {
    var id: String
    var title: String
    var body: String
    var count: Int
    /// Never empty: an empty list and an absent field must not be confused.
    var tags: [String]
    var cloudMetadata: RecordMetadata?

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
    case title, body, count, tags

    /// The field's value as the oracle compares it.
    func value(of note: SimNote) -> String {
        switch self {
        case .title: note.title
        case .body: note.body
        case .count: String(note.count)
        case .tags: note.tags.joined(separator: ",")
        }
    }

    /// Sets the field from a value made by ``value(of:)`` or ``fresh(_:)``.
    func set(_ value: String, on note: inout SimNote) {
        switch self {
        case .title: note.title = value
        case .body: note.body = value
        case .count:
            guard let count = Int(value) else { preconditionFailure("Internal inconsistency: count '\(value)'") }
            note.count = count
        case .tags: note.tags = value.split(separator: ",").map(String.init)
        }
    }

    /// A value nobody used before: `serial` is unique within a history.
    /// `writer` marks the value as theirs (the count stays a number).
    func fresh(_ serial: Int, writer: String? = nil) -> String {
        let mark = writer.map { "~\($0)" } ?? ""
        return switch self {
        case .title: "T\(serial)\(mark)"
        case .body: "B\(serial)\(mark)"
        case .count: String(serial)
        case .tags: "G\(serial)\(mark),H\(serial)\(mark)"
        }
    }
}
