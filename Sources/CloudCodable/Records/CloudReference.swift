/// A typed link from one model to another of the same zone: a `REFERENCE`
/// field holding the target's record name and an action.
///
/// ```swift
/// struct Photo: CloudCodable, Identifiable {
///     var id: String
///     var album: CloudReference<Album>   // deleting the album deletes the photo
///     var cloudMetadata: RecordMetadata?
/// }
/// let photo = Photo(id: "p1", album: CloudReference(album, action: .deleteSelf))
/// ```
///
/// The record encoder writes it as `{"recordName": …, "action": …}` with no
/// zone: the target is in the referring record's zone. A list of them is a
/// `REFERENCE_LIST`, and an optional one that is `nil` leaves the field out.
/// The decoder also reads references written by other clients that name
/// the record's own zone, and refuses one that names another zone (the
/// zone being the one of the record's metadata: a record from a server).
///
/// With ``Reference/Action/deleteSelf``, deleting the target on the server
/// deletes this record too; with ``Reference/Action/validate``, the server
/// refuses to save this record while the target does not exist.
public struct CloudReference<Target: CloudCodable>: Sendable, Hashable, Codable {
    /// What the server does with the referring record; see ``Reference/Action``.
    public typealias Action = Reference.Action

    /// The target's ``CloudCodable/cloudIdentifier``: its record name.
    public var identifier: String
    /// What the server does with the referring record when the target goes.
    public var action: Action

    /// A reference to `target`.
    public init(_ target: Target, action: Action = .none) {
        self.init(identifier: target.cloudIdentifier, action: action)
    }

    /// A reference to the model of type `Target` whose
    /// ``CloudCodable/cloudIdentifier`` is `identifier`.
    public init(identifier: String, action: Action = .none) {
        self.identifier = identifier
        self.action = action
    }

    /// The reference as a field holds it: the target in the record's own zone.
    public var reference: Reference {
        Reference(recordName: identifier, action: action)
    }

    /// Reads a reference; its zone, if it names one, is not kept (the
    /// record decoder checks it against the record's zone first).
    public init(from decoder: any Decoder) throws {
        let reference = try decoder.singleValueContainer().decode(Reference.self)
        self.init(identifier: reference.recordName, action: reference.action)
    }

    /// Writes the reference; the record encoder makes it a `REFERENCE` field.
    ///
    /// - Throws: `EncodingError` when the identifier is empty.
    public func encode(to encoder: any Encoder) throws {
        guard !identifier.isEmpty else {
            throw EncodingError.invalidValue(
                identifier,
                .init(
                    codingPath: encoder.codingPath,
                    debugDescription: "a CloudReference<\(Target.self)> needs the identifier of its target"))
        }
        var container = encoder.singleValueContainer()
        try container.encode(ReferenceValue(reference: reference))
    }
}

/// What a ``CloudReference`` encodes: a `Reference` that the record
/// encoders recognise by its type (and make a `REFERENCE` field), and that
/// other encoders write as a plain `Reference`.
struct ReferenceValue: Encodable {
    var reference: Reference

    func encode(to encoder: any Encoder) throws {
        try reference.encode(to: encoder)
    }
}

// MARK: - Decoding reference fields

/// A type the record decoder builds from a `REFERENCE` field, checking the
/// field's zone against the record's.
protocol ReferenceFieldDecodable {
    init(field reference: Reference, recordZone: ZoneID?, codingPath: @autoclosure () -> [any CodingKey]) throws
}

/// A type the record decoder builds from a `REFERENCE_LIST` field.
protocol ReferenceListFieldDecodable {
    init(field list: [Reference], recordZone: ZoneID?, codingPath: @autoclosure () -> [any CodingKey]) throws
}

/// An array of references, which an empty list is written as: an empty
/// list says nothing of its element type otherwise.
protocol ReferenceListEncodable {}

extension CloudReference: ReferenceFieldDecodable {
    init(field reference: Reference, recordZone: ZoneID?, codingPath: @autoclosure () -> [any CodingKey]) throws {
        if let zone = reference.zoneID, let recordZone, !Self.isSameZone(zone, recordZone) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath(),
                    debugDescription:
                        "the reference to '\(reference.recordName)' names zone '\(zone.zoneName)', not the record's "
                        + "zone '\(recordZone.zoneName)': a CloudReference stays in its record's zone"))
        }
        self.init(identifier: reference.recordName, action: reference.action)
    }

    /// Whether a reference's zone is the record's: the same name, and the
    /// same owner when both say (see ``ZoneID/namedOwner``).
    static func isSameZone(_ zone: ZoneID, _ recordZone: ZoneID) -> Bool {
        guard zone.zoneName.utf8.elementsEqual(recordZone.zoneName.utf8) else { return false }
        guard let owner = zone.namedOwner, let recordOwner = recordZone.namedOwner else { return true }
        return owner.utf8.elementsEqual(recordOwner.utf8)
    }
}

extension Array: ReferenceListFieldDecodable where Element: ReferenceFieldDecodable {
    init(field list: [Reference], recordZone: ZoneID?, codingPath: @autoclosure () -> [any CodingKey]) throws {
        self = try list.map { try Element(field: $0, recordZone: recordZone, codingPath: codingPath()) }
    }
}

extension Array: ReferenceListEncodable where Element: ReferenceFieldDecodable {}
