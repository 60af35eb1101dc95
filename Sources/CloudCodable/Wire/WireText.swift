/// The fixed text of the record wire form, shared by the writer and the size
/// counter so that the two can never disagree.
enum WireText {
    // Record dictionary.
    static var recordOpen: StaticString { #"{"recordName":"# }
    static var recordType: StaticString { #","recordType":"# }
    static var recordChangeTag: StaticString { #","recordChangeTag":"# }
    static var fields: StaticString { #","fields":"# }
    static var created: StaticString { #","created":"# }
    static var modified: StaticString { #","modified":"# }
    static var zoneID: StaticString { #","zoneID":"# }
    static var parent: StaticString { #","parent":{"recordName":"# }
    static var share: StaticString { #","share":{"recordName":"# }
    /// What follows the name of a field an update clears (Cumulus's dialect).
    static var clearedValue: StaticString { #":{"value":null}"# }

    // A share record's keys, after the zone.
    static var shortGUID: StaticString { #","shortGUID":"# }
    static var publicPermission: StaticString { #","publicPermission":"# }
    static var participants: StaticString { #","participants":["# }
    static var owner: StaticString { #","owner":"# }
    static var currentUserParticipant: StaticString { #","currentUserParticipant":"# }
    static var url: StaticString { #","url":"# }

    // Stamps: {"timestamp":…,"userRecordName":…,"deviceID":…}
    static var stampOpen: StaticString { #"{"timestamp":"# }
    static var userRecordName: StaticString { #","userRecordName":"# }
    static var deviceID: StaticString { #","deviceID":"# }

    // Zone IDs: {"zoneName":…,"ownerRecordName":…}
    static var zoneOpen: StaticString { #"{"zoneName":"# }
    static var ownerRecordName: StaticString { #","ownerRecordName":"# }

    // References: {"recordName":…,"zoneID":…,"action":"NONE"}
    static var referenceOpen: StaticString { #"{"recordName":"# }
    static var referenceZoneID: StaticString { #","zoneID":"# }
    static var referenceAction: StaticString { #","action":"# }

    // Assets: the non-nil keys among these, in this order.
    static var fileChecksum: StaticString { #""fileChecksum":"# }
    static var size: StaticString { #""size":"# }
    static var referenceChecksum: StaticString { #""referenceChecksum":"# }
    static var wrappingKey: StaticString { #""wrappingKey":"# }
    static var receipt: StaticString { #""receipt":"# }
    static var downloadURL: StaticString { #""downloadURL":"# }

    // Locations: latitude and longitude, then the non-nil others.
    static var locationOpen: StaticString { #"{"latitude":"# }
    static var longitude: StaticString { #","longitude":"# }
    static var horizontalAccuracy: StaticString { #","horizontalAccuracy":"# }
    static var verticalAccuracy: StaticString { #","verticalAccuracy":"# }
    static var altitude: StaticString { #","altitude":"# }
    static var speed: StaticString { #","speed":"# }
    static var course: StaticString { #","course":"# }
    static var locationTimestamp: StaticString { #","timestamp":"# }

    /// What follows a field's name: `:{"type":"…","value":`. The field's
    /// value and a closing brace complete it.
    @inline(__always)
    static func fieldPrefix(_ type: FieldType) -> StaticString {
        switch type {
        case .string: #":{"type":"STRING","value":"#
        case .int64: #":{"type":"INT64","value":"#
        case .double: #":{"type":"DOUBLE","value":"#
        case .timestamp: #":{"type":"TIMESTAMP","value":"#
        case .bytes: #":{"type":"BYTES","value":"#
        case .reference: #":{"type":"REFERENCE","value":"#
        case .asset: #":{"type":"ASSETID","value":"#
        case .location: #":{"type":"LOCATION","value":"#
        case .stringList: #":{"type":"STRING_LIST","value":"#
        case .int64List: #":{"type":"INT64_LIST","value":"#
        case .doubleList: #":{"type":"DOUBLE_LIST","value":"#
        case .timestampList: #":{"type":"TIMESTAMP_LIST","value":"#
        case .bytesList: #":{"type":"BYTES_LIST","value":"#
        case .referenceList: #":{"type":"REFERENCE_LIST","value":"#
        case .assetList: #":{"type":"ASSETID_LIST","value":"#
        case .locationList: #":{"type":"LOCATION_LIST","value":"#
        }
    }

    /// A reference action as written, quotes included.
    @inline(__always)
    static func action(_ action: Reference.Action) -> StaticString {
        switch action {
        case .none: #""NONE""#
        case .deleteSelf: #""DELETE_SELF""#
        case .validate: #""VALIDATE""#
        }
    }
}
