import Cumulus

/// One version of the simulated app's model: distinct Swift types with one
/// record type, as an app's `Note` is from one release to the next.
///
/// - Version 1 declares title, body, count and tags (all required).
/// - Version 2 adds `rating: Int?`.
/// - Version 3 removes `body` and makes `rating` required. Its upgrade
///   path is a custom `init(from:)` that reads a record without a rating
///   (written by version 1, or cleared by version 2) as rating 0, so that
///   every record of the earlier versions still decodes. Version 1 and 2
///   cannot decode a record version 3 created (it has no body): their
///   engines keep it undecodable until the device updates.
///
/// Every version encrypts the title (``SimVersions/encryptedFields``) and
/// keeps a `mark` on the device (``SimVersions/localFields``).
protocol SimModel: CloudCodable, Identifiable<String>, Hashable {
    /// The version's number, 1 to 3.
    static var version: Int { get }
    /// The fields this version declares (encodes and decodes).
    static var fields: [SimField] { get }
    /// The model of `note`, dropping the fields this version does not declare.
    init(_ note: SimNote)
    /// The model as the simulator sees it: `nil` for the fields this version does not declare.
    var note: SimNote { get }
}

/// The version types by number.
enum SimVersions {
    static let all: [Int] = [1, 2, 3]
    /// The fields every version encrypts: one all of them declare.
    static let encryptedFields: Set<String> = [SimulationKeys.encryptedField.rawValue]
    /// The fields every version keeps on the device.
    static let localFields: Set<String> = ["mark"]

    /// The fields version `version` declares.
    static func fields(of version: Int) -> [SimField] {
        switch version {
        case 1: SimNoteV1.fields
        case 2: SimNoteV2.fields
        default: SimNoteV3.fields
        }
    }

    /// Whether version `version` decodes every record any version writes
    /// (version 3 reads a missing body or rating).
    static func readsEveryVersion(_ version: Int) -> Bool { version == 3 }

    /// `note` as version `version`'s model writes it when it sends the
    /// whole record (a create, or an edit of a record deleted since):
    /// version 3 writes its default rating for none.
    static func written(_ note: SimNote, version: Int) -> SimNote {
        var written = note
        for field in SimField.allCases where !fields(of: version).contains(field) {
            field.set(SimField.absent, on: &written)
        }
        if version == 3, written.rating == nil { written.rating = SimNoteV3.defaultRating }
        return written
    }

    /// `note` as version `version` sees it: what its model decodes of the
    /// record, or `nil` when it cannot decode it.
    static func decode(_ record: Record, version: Int) -> SimNote? {
        switch version {
        case 1: decode(SimNoteV1.self, record)
        case 2: decode(SimNoteV2.self, record)
        default: decode(SimNoteV3.self, record)
        }
    }

    private static func decode<Model: SimModel>(_: Model.Type, _ record: Record) -> SimNote? {
        guard var model = try? RecordDecoder().decode(Model.self, from: record) else { return nil }
        model.cloudMetadata = record.metadata
        return model.note
    }
}

/// Version 1 of the app: the model the simulation started with.
struct SimNoteV1: SimModel {
    static let version = 1
    static let fields: [SimField] = [.title, .body, .count, .tags]
    static var cloudRecordType: String { SimNote.cloudRecordType }
    static var cloudEncryptedFields: Set<String> { SimVersions.encryptedFields }
    static var cloudLocalFields: Set<String> { SimVersions.localFields }

    var id: String
    var title: String
    var body: String
    var count: Int
    var tags: [String]
    var mark: String? = nil
    var cloudMetadata: RecordMetadata?

    init(_ note: SimNote) {
        id = note.id
        title = note.title
        body = note.body ?? ""
        count = note.count
        tags = note.tags
        mark = note.mark
        cloudMetadata = note.cloudMetadata
    }

    var note: SimNote {
        SimNote(id: id, title: title, body: body, count: count, tags: tags, mark: mark, cloudMetadata: cloudMetadata)
    }
}

/// Version 2: adds an optional rating.
struct SimNoteV2: SimModel {
    static let version = 2
    static let fields: [SimField] = [.title, .body, .count, .tags, .rating]
    static var cloudRecordType: String { SimNote.cloudRecordType }
    static var cloudEncryptedFields: Set<String> { SimVersions.encryptedFields }
    static var cloudLocalFields: Set<String> { SimVersions.localFields }

    var id: String
    var title: String
    var body: String
    var count: Int
    var tags: [String]
    var rating: Int?
    var mark: String? = nil
    var cloudMetadata: RecordMetadata?

    init(_ note: SimNote) {
        id = note.id
        title = note.title
        body = note.body ?? ""
        count = note.count
        tags = note.tags
        rating = note.rating
        mark = note.mark
        cloudMetadata = note.cloudMetadata
    }

    var note: SimNote {
        SimNote(
            id: id, title: title, body: body, count: count, tags: tags, rating: rating, mark: mark,
            cloudMetadata: cloudMetadata)
    }
}

/// Version 3: no body any more, and a rating every note has.
struct SimNoteV3: SimModel {
    static let version = 3
    static let fields: [SimField] = [.title, .count, .tags, .rating]
    static var cloudRecordType: String { SimNote.cloudRecordType }
    static var cloudEncryptedFields: Set<String> { SimVersions.encryptedFields }
    static var cloudLocalFields: Set<String> { SimVersions.localFields }
    /// What a record without a rating reads as.
    static let defaultRating = 0

    var id: String
    var title: String
    var count: Int
    var tags: [String]
    var rating: Int
    var mark: String? = nil
    var cloudMetadata: RecordMetadata?

    private enum CodingKeys: String, CodingKey {
        case id, title, count, tags, rating, mark, cloudMetadata
    }

    init(_ note: SimNote) {
        id = note.id
        title = note.title
        count = note.count
        tags = note.tags
        rating = note.rating ?? Self.defaultRating
        mark = note.mark
        cloudMetadata = note.cloudMetadata
    }

    /// The upgrade path of a required field: a record written before
    /// version 3 (or cleared by version 2) has no rating and reads as 0.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        title = try container.decode(String.self, forKey: .title)
        count = try container.decode(Int.self, forKey: .count)
        tags = try container.decode([String].self, forKey: .tags)
        rating = try container.decodeIfPresent(Int.self, forKey: .rating) ?? Self.defaultRating
        mark = try container.decodeIfPresent(String.self, forKey: .mark)
        // The record decoder sets the metadata, which is never a field.
        cloudMetadata = nil
    }

    /// The simulation never writes rating 0: 0 is the default of a record without one.
    var note: SimNote {
        SimNote(
            id: id, title: title, body: nil, count: count, tags: tags,
            rating: rating == Self.defaultRating ? nil : rating, mark: mark, cloudMetadata: cloudMetadata)
    }
}
