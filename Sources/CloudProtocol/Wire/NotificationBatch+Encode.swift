import CloudCodable

extension NotificationBatch {
    /// The batch's JSON body:
    /// `{"notifications":[{"type":"zone","zoneID":…,"subscriptionID":…}, {"type":"database"}, {"type":"account"}],"cursor":…}`;
    /// a query subscription's entry is
    /// `{"type":"query","subscriptionID":…,"zoneID":…,"recordName":…,"reason":"created"|"updated"|"deleted"}`.
    public func encodedBody() -> [UInt8] {
        var writer = JSONWriter(capacity: 64 + notifications.count * 96)
        writer.appendRaw(#"{"notifications":["#)
        for index in notifications.indices {
            if index > 0 { writer.append(byte: UInt8(ascii: ",")) }
            switch notifications[index] {
            case .zoneChanged(let zoneID, let subscriptionID):
                writer.appendRaw(#"{"type":"zone","zoneID":"#)
                writer.appendZoneID(zoneID)
                if let subscriptionID {
                    writer.appendRaw(#","subscriptionID":"#)
                    writer.appendString(subscriptionID)
                }
                writer.append(byte: UInt8(ascii: "}"))
            case .queryChanged(let notification):
                writer.appendRaw(#"{"type":"query","subscriptionID":"#)
                writer.appendString(notification.subscriptionID)
                writer.appendRaw(#","zoneID":"#)
                writer.appendZoneID(notification.zoneID)
                writer.appendRaw(#","recordName":"#)
                writer.appendString(notification.recordName)
                writer.appendRaw(#","reason":"#)
                writer.appendString(notification.reason.rawValue)
                writer.append(byte: UInt8(ascii: "}"))
            case .databaseChanged:
                writer.appendRaw(#"{"type":"database"}"#)
            case .accountChanged:
                writer.appendRaw(#"{"type":"account"}"#)
            }
        }
        writer.appendRaw(#"],"cursor":"#)
        writer.appendString(cursor)
        writer.append(byte: UInt8(ascii: "}"))
        return writer.bytes
    }
}
