import Foundation

/// A record is coded as its CloudKit Web Services record dictionary, the
/// same shape as ``WireFormat`` writes:
///
/// ```json
/// {"recordName": "n1", "recordType": "Note", "recordChangeTag": "3",
///  "fields": {"title": {"type": "STRING", "value": "Groceries"}},
///  "created": {"timestamp": 1700000000000, "userRecordName": "_u1"},
///  "zoneID": {"zoneName": "_defaultZone"}}
/// ```
///
/// `recordChangeTag`, `created` and `modified` come from ``Record/metadata``.
/// Decoding: `recordName` and `recordType` are required, a missing `zoneID`
/// is ``ZoneID/defaultZone``, missing `fields` are none, and the metadata is
/// set when (and only when) `recordChangeTag` is present, with the record's zone.
/// ``Record/parent`` is `parent: {"recordName": …}` (a full reference
/// dictionary is accepted), ``Record/share`` is `share: {"recordName": …,
/// "zoneID": …}`, and ``Record/shareDetails`` are a share's keys, spelled as
/// on the wire.
extension Record: Codable {
    private enum CodingKeys: String, CodingKey {
        case recordName, recordType, recordChangeTag, fields, created, modified, zoneID, parent, share
        case shortGUID, publicPermission, participants, owner, currentUserParticipant, url
    }

    /// A field's name as a coding key.
    private struct FieldName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init(_ name: String) { stringValue = name }

        init?(stringValue: String) { self.stringValue = stringValue }

        init?(intValue: Int) { nil }
    }

    /// Decodes a record dictionary.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let recordName = try container.decode(String.self, forKey: .recordName)
        let recordType = try container.decode(String.self, forKey: .recordType)
        let zoneID = try container.decodeIfPresent(ZoneID.self, forKey: .zoneID) ?? .defaultZone
        var fields = RecordFields()
        if try container.contains(.fields) && !container.decodeNil(forKey: .fields) {
            let values = try container.nestedContainer(keyedBy: FieldName.self, forKey: .fields)
            fields = RecordFields(minimumCapacity: values.allKeys.count)
            for name in values.allKeys {
                fields[name.stringValue] = try values.decode(FieldValue.self, forKey: name)
            }
        }
        var metadata: RecordMetadata?
        if let changeTag = try container.decodeIfPresent(String.self, forKey: .recordChangeTag) {
            metadata = RecordMetadata(
                changeTag: changeTag, zoneID: zoneID,
                created: try container.decodeIfPresent(RecordStamp.self, forKey: .created),
                modified: try container.decodeIfPresent(RecordStamp.self, forKey: .modified))
        }
        self.init(
            recordType: recordType, recordName: recordName, zoneID: zoneID, fields: fields, metadata: metadata)
        parent = try container.decodeIfPresent(NameReference.self, forKey: .parent)?.recordName
        share = try container.decodeIfPresent(NameReference.self, forKey: .share)?.recordName
        shareDetails = try Self.decodeShareDetails(container)
    }

    private static func decodeShareDetails(_ container: KeyedDecodingContainer<CodingKeys>) throws -> ShareDetails? {
        let keys: [CodingKeys] = [.shortGUID, .publicPermission, .participants, .owner, .currentUserParticipant, .url]
        guard try keys.contains(where: { try container.contains($0) && !container.decodeNil(forKey: $0) }) else {
            return nil
        }
        return ShareDetails(
            shortGUID: try container.decodeIfPresent(String.self, forKey: .shortGUID),
            publicPermission: try container.decodeIfPresent(SharePermission.self, forKey: .publicPermission) ?? .none,
            participants: try container.decodeIfPresent([WireParticipant].self, forKey: .participants)?.map(\.value)
                ?? [],
            owner: try container.decodeIfPresent(WireParticipant.self, forKey: .owner)?.value,
            currentUserParticipant: try container.decodeIfPresent(
                WireParticipant.self, forKey: .currentUserParticipant)?
                .value,
            url: try container.decodeIfPresent(String.self, forKey: .url))
    }

    /// Encodes the record dictionary.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(recordName, forKey: .recordName)
        try container.encode(recordType, forKey: .recordType)
        try container.encodeIfPresent(metadata?.changeTag, forKey: .recordChangeTag)
        var values = container.nestedContainer(keyedBy: FieldName.self, forKey: .fields)
        for (name, value) in fields {
            try values.encode(value, forKey: FieldName(name))
        }
        try container.encodeIfPresent(metadata?.created, forKey: .created)
        try container.encodeIfPresent(metadata?.modified, forKey: .modified)
        try container.encode(zoneID, forKey: .zoneID)
        try container.encodeIfPresent(parent.map { NameReference(recordName: $0) }, forKey: .parent)
        try container.encodeIfPresent(share.map { NameReference(recordName: $0, zoneID: zoneID) }, forKey: .share)
        if let details = shareDetails {
            try container.encodeIfPresent(details.shortGUID, forKey: .shortGUID)
            try container.encode(details.publicPermission, forKey: .publicPermission)
            try container.encode(details.participants.map(WireParticipant.init), forKey: .participants)
            try container.encodeIfPresent(details.owner.map(WireParticipant.init), forKey: .owner)
            try container.encodeIfPresent(
                details.currentUserParticipant.map(WireParticipant.init), forKey: .currentUserParticipant)
            try container.encodeIfPresent(details.url, forKey: .url)
        }
    }
}

/// `{"recordName": …, "zoneID": …}`: a record's `parent` or `share`. Other
/// keys of a reference dictionary (`action`) are ignored.
private struct NameReference: Codable {
    var recordName: String
    var zoneID: ZoneID?
}

/// A participant as the wire spells it (``ShareParticipant``'s own coding
/// uses its Swift names).
private struct WireParticipant: Codable {
    var value: ShareParticipant

    private enum CodingKeys: String, CodingKey {
        case participantId, userIdentity, type, acceptanceStatus, permission
    }

    private struct Identity: Codable {
        var userRecordName: String?
        var lookupInfo: UserLookupInfo?
        var nameComponents: UserNameComponents?
    }

    init(_ value: ShareParticipant) { self.value = value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let identity = try container.decodeIfPresent(Identity.self, forKey: .userIdentity)
        value = ShareParticipant(
            participantID: try container.decodeIfPresent(String.self, forKey: .participantId),
            userRecordName: identity?.userRecordName, lookupInfo: identity?.lookupInfo,
            nameComponents: identity?.nameComponents,
            role: try container.decodeIfPresent(ShareParticipantRole.self, forKey: .type) ?? .user,
            acceptanceStatus: try container.decodeIfPresent(ShareAcceptanceStatus.self, forKey: .acceptanceStatus)
                ?? .pending,
            permission: try container.decode(SharePermission.self, forKey: .permission))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(value.participantID, forKey: .participantId)
        try container.encode(
            Identity(
                userRecordName: value.userRecordName, lookupInfo: value.lookupInfo,
                nameComponents: value.nameComponents),
            forKey: .userIdentity)
        try container.encode(value.role, forKey: .type)
        try container.encode(value.acceptanceStatus, forKey: .acceptanceStatus)
        try container.encode(value.permission, forKey: .permission)
    }
}
