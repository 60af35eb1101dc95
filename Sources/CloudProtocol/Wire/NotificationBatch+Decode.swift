import CloudCodable
import Foundation

extension NotificationBatch {
    /// Reads a batch. Notifications of a type this version does not know
    /// are left out, so that a newer server does not stop an older client's poll.
    ///
    /// - Throws: ``CloudError`` (`INTERNAL_ERROR`) for a body that is not a valid batch.
    public static func decode(body: [UInt8]) throws -> NotificationBatch {
        try withCloudErrors(.internalError, "the notification batch is not valid") {
            try WireBodyReader.read(body) { reader in
                var notifications: [CloudNotification]?
                var cursor: String?
                try reader.readObject("the batch") { reader, key in
                    switch key {
                    case "notifications":
                        var list: [CloudNotification] = []
                        var index = 0
                        try reader.readArray("'notifications'") { reader in
                            if let notification = try readNotification(&reader, index) { list.append(notification) }
                            index += 1
                        }
                        notifications = list
                    case "cursor": cursor = try reader.readString("cursor, a string")
                    default: try reader.skipValue()
                    }
                }
                try reader.expectEnd()
                guard let notifications else { throw reader.missing("notifications", in: "the batch", at: 0) }
                guard let cursor else { throw reader.missing("cursor", in: "the batch", at: 0) }
                return NotificationBatch(notifications: notifications, cursor: cursor)
            }
        }
    }

    private static func readNotification(_ reader: inout WireBodyReader, _ index: Int) throws -> CloudNotification? {
        let what = "notification \(index)"
        let start = reader.position
        var type: String?
        var zoneID: ZoneID?
        var subscriptionID: String?
        var recordName: String?
        var reason: (name: String, offset: Int)?
        try reader.readObject(what) { reader, key in
            switch key {
            case "type": type = try reader.readString("type, a string")
            case "zoneID": zoneID = try reader.skipNull() ? nil : reader.readZoneID()
            case "subscriptionID": subscriptionID = try reader.readOptionalString("subscriptionID, a string")
            case "recordName": recordName = try reader.readString("recordName, a string")
            case "reason":
                let offset = reader.position
                reason = (try reader.readString("reason, a string"), offset)
            default: try reader.skipValue()
            }
        }
        switch type {
        case "zone":
            guard let zoneID else { throw reader.missing("zoneID", in: what, at: start) }
            return .zoneChanged(zoneID, subscriptionID: subscriptionID)
        case "query":
            guard let subscriptionID else { throw reader.missing("subscriptionID", in: what, at: start) }
            guard let zoneID else { throw reader.missing("zoneID", in: what, at: start) }
            guard let recordName else { throw reader.missing("recordName", in: what, at: start) }
            guard let reason else { throw reader.missing("reason", in: what, at: start) }
            guard let known = QueryNotification.Reason(rawValue: reason.name) else {
                throw reader.error(
                    "\(what): reason '\(reason.name)' is not created, updated or deleted", at: reason.offset)
            }
            return .queryChanged(
                QueryNotification(subscriptionID: subscriptionID, recordName: recordName, zoneID: zoneID, reason: known)
            )
        case "database": return .databaseChanged
        case "account": return .accountChanged
        case nil: throw reader.missing("type", in: what, at: start)
        default: return nil
        }
    }
}
