/// The keys the record reader knows, recognised from their bytes without
/// making a `String`.
enum WireKey {
    case recordName, recordType, recordChangeTag, fields, created, modified, zoneID, deleted
    case value, type
    case timestamp, userRecordName, deviceID
    case zoneName, ownerRecordName
    case action
    case serverErrorCode
    case fileChecksum, size, referenceChecksum, wrappingKey, receipt, downloadURL
    case latitude, longitude, horizontalAccuracy, verticalAccuracy, altitude, speed, course
    case parent, share
    case shortGUID, publicPermission, participants, owner, currentUserParticipant, url
    case participantId, userIdentity, lookupInfo, nameComponents, acceptanceStatus, permission
    case emailAddress, phoneNumber, givenName, familyName
    /// Any other key: its value is skipped.
    case unknown

    /// The key spelled by `bytes` (unescaped UTF-8).
    @inline(__always)
    static func match(_ bytes: UnsafeBufferPointer<UInt8>) -> WireKey {
        switch bytes.count {
        case 3:
            if equal(bytes, "url") { return .url }
        case 4:
            if equal(bytes, "type") { return .type }
            if equal(bytes, "size") { return .size }
        case 5:
            if equal(bytes, "value") { return .value }
            if equal(bytes, "speed") { return .speed }
            if equal(bytes, "share") { return .share }
            if equal(bytes, "owner") { return .owner }
        case 6:
            if equal(bytes, "fields") { return .fields }
            if equal(bytes, "zoneID") { return .zoneID }
            if equal(bytes, "action") { return .action }
            if equal(bytes, "course") { return .course }
            if equal(bytes, "parent") { return .parent }
        case 7:
            if equal(bytes, "created") { return .created }
            if equal(bytes, "deleted") { return .deleted }
            if equal(bytes, "receipt") { return .receipt }
        case 8:
            if equal(bytes, "modified") { return .modified }
            if equal(bytes, "zoneName") { return .zoneName }
            if equal(bytes, "deviceID") { return .deviceID }
            if equal(bytes, "latitude") { return .latitude }
            if equal(bytes, "altitude") { return .altitude }
        case 9:
            if equal(bytes, "timestamp") { return .timestamp }
            if equal(bytes, "longitude") { return .longitude }
            if equal(bytes, "shortGUID") { return .shortGUID }
            if equal(bytes, "givenName") { return .givenName }
        case 10:
            if equal(bytes, "recordName") { return .recordName }
            if equal(bytes, "recordType") { return .recordType }
            if equal(bytes, "lookupInfo") { return .lookupInfo }
            if equal(bytes, "permission") { return .permission }
            if equal(bytes, "familyName") { return .familyName }
        case 11:
            if equal(bytes, "wrappingKey") { return .wrappingKey }
            if equal(bytes, "downloadURL") { return .downloadURL }
            if equal(bytes, "phoneNumber") { return .phoneNumber }
        case 12:
            if equal(bytes, "fileChecksum") { return .fileChecksum }
            if equal(bytes, "participants") { return .participants }
            if equal(bytes, "userIdentity") { return .userIdentity }
            if equal(bytes, "emailAddress") { return .emailAddress }
        case 13:
            if equal(bytes, "participantId") { return .participantId }
        case 14:
            if equal(bytes, "userRecordName") { return .userRecordName }
            if equal(bytes, "nameComponents") { return .nameComponents }
        case 15:
            if equal(bytes, "recordChangeTag") { return .recordChangeTag }
            if equal(bytes, "ownerRecordName") { return .ownerRecordName }
            if equal(bytes, "serverErrorCode") { return .serverErrorCode }
        case 16:
            if equal(bytes, "verticalAccuracy") { return .verticalAccuracy }
            if equal(bytes, "publicPermission") { return .publicPermission }
            if equal(bytes, "acceptanceStatus") { return .acceptanceStatus }
        case 17:
            if equal(bytes, "referenceChecksum") { return .referenceChecksum }
        case 18:
            if equal(bytes, "horizontalAccuracy") { return .horizontalAccuracy }
        case 22:
            if equal(bytes, "currentUserParticipant") { return .currentUserParticipant }
        default:
            break
        }
        return .unknown
    }

    /// The field type spelled by `bytes`, or `nil`.
    @inline(__always)
    static func fieldType(_ bytes: UnsafeBufferPointer<UInt8>) -> FieldType? {
        switch bytes.count {
        case 5:
            if equal(bytes, "INT64") { return .int64 }
            if equal(bytes, "BYTES") { return .bytes }
        case 6:
            if equal(bytes, "STRING") { return .string }
            if equal(bytes, "DOUBLE") { return .double }
        case 7:
            if equal(bytes, "ASSETID") { return .asset }
        case 8:
            if equal(bytes, "LOCATION") { return .location }
        case 9:
            if equal(bytes, "TIMESTAMP") { return .timestamp }
            if equal(bytes, "REFERENCE") { return .reference }
        case 10:
            if equal(bytes, "INT64_LIST") { return .int64List }
            if equal(bytes, "BYTES_LIST") { return .bytesList }
        case 11:
            if equal(bytes, "STRING_LIST") { return .stringList }
            if equal(bytes, "DOUBLE_LIST") { return .doubleList }
        case 12:
            if equal(bytes, "ASSETID_LIST") { return .assetList }
        case 13:
            if equal(bytes, "LOCATION_LIST") { return .locationList }
        case 14:
            if equal(bytes, "TIMESTAMP_LIST") { return .timestampList }
            if equal(bytes, "REFERENCE_LIST") { return .referenceList }
        default:
            break
        }
        return nil
    }

    /// The reference action spelled by `bytes`, or `nil`.
    @inline(__always)
    static func action(_ bytes: UnsafeBufferPointer<UInt8>) -> Reference.Action? {
        if equal(bytes, "NONE") { return Reference.Action.none }
        if equal(bytes, "DELETE_SELF") { return .deleteSelf }
        if equal(bytes, "VALIDATE") { return .validate }
        return nil
    }

    /// Whether `bytes` spell `literal` (which is ASCII).
    @inline(__always)
    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ literal: StaticString) -> Bool {
        literal.withUTF8Buffer { text in
            guard bytes.count == text.count else { return false }
            for i in 0..<text.count where bytes[i] != text[i] {
                return false
            }
            return true
        }
    }
}
