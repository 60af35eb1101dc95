import Foundation

extension JSONWriter {
    /// Appends `record` as a CloudKit Web Services record dictionary:
    ///
    /// ```json
    /// {"recordName":"n1","recordType":"Note","recordChangeTag":"3",
    ///  "fields":{"title":{"type":"STRING","value":"Groceries"}},
    ///  "created":{"timestamp":1700000000000,"userRecordName":"_u1"},
    ///  "modified":{"timestamp":1700000000500,"userRecordName":"_u1"},
    ///  "zoneID":{"zoneName":"_defaultZone"}}
    /// ```
    ///
    /// `recordChangeTag`, `created` and `modified` come from
    /// ``Record/metadata`` and are written only when present; the zone is
    /// ``Record/zoneID``. After the zone come, when set, `parent`
    /// (`{"recordName":…}`), `share` (`{"recordName":…,"zoneID":…}`, the
    /// record's zone) and a share record's keys (``Record/shareDetails``). Each field is `{"type":…,"value":…}`, type first, in
    /// the order of ``Record/fields``. Timestamps are whole milliseconds since 1970,
    /// bytes are padded base64.
    ///
    /// - Throws: `.invalidValue`, naming the field, for a double (or a
    ///   location coordinate) that is not finite and for a date whose
    ///   milliseconds do not fit `Int64`: JSON cannot hold them. The writer
    ///   is then left as it was before the call.
    public mutating func writeRecord(_ record: Record) throws {
        try writeRecordTyped(record)
    }

    /// Appends `record` as ``writeRecord(_:)`` does, with each name of
    /// `clearedFields` inside `fields` as `"name":{"value":null}`: how an
    /// `update` of Cumulus's dialect clears a field.
    package mutating func writeRecord(_ record: Record, clearing clearedFields: [String]) throws {
        try writeRecordTyped(record, clearing: clearedFields)
    }

    /// ``writeRecord(_:)`` with its error type, for callers in this module.
    mutating func writeRecordTyped(_ record: Record, clearing clearedFields: [String] = [])
        throws(WireFormatError)
    {
        makeUnique()
        let start = length
        do {
            try writeRecordDictionary(record, clearing: clearedFields)
        } catch {
            length = start
            throw error
        }
    }

    private mutating func writeRecordDictionary(_ record: Record, clearing clearedFields: [String])
        throws(WireFormatError)
    {
        put(WireText.recordOpen)
        putString(record.recordName)
        put(WireText.recordType)
        putString(record.recordType)
        if let metadata = record.metadata {
            put(WireText.recordChangeTag)
            putString(metadata.changeTag)
        }
        put(WireText.fields)
        try writeFields(record.fields)
        if !clearedFields.isEmpty { appendClearedFields(clearedFields, afterAny: !record.fields.isEmpty) }
        if let metadata = record.metadata {
            if let created = metadata.created {
                put(WireText.created)
                writeStamp(created)
            }
            if let modified = metadata.modified {
                put(WireText.modified)
                writeStamp(modified)
            }
        }
        put(WireText.zoneID)
        writeZoneID(record.zoneID)
        if let parent = record.parent {
            put(WireText.parent)
            putString(parent)
            put(UInt8(ascii: "}"))
        }
        if let share = record.share {
            put(WireText.share)
            putString(share)
            put(WireText.referenceZoneID)
            writeZoneID(record.zoneID)
            put(UInt8(ascii: "}"))
        }
        if let details = record.shareDetails { writeShareDetails(details) }
        put(UInt8(ascii: "}"))
    }

    /// Appends the `fields` object: `{name:{"type":…,"value":…},…}`.
    mutating func writeFields(_ fields: RecordFields) throws(WireFormatError) {
        if let wire = fields.wire {
            try writeFields(wire)
            return
        }
        put(UInt8(ascii: "{"))
        let entries = fields.entries
        for i in entries.indices {
            if i > 0 { put(UInt8(ascii: ",")) }
            putString(entries[i].name)
            do {
                try writeValue(entries[i].value)
            } catch {
                throw WireFormatError(error.code, offset: nil, message: "field '\(entries[i].name)': \(error.message)")
            }
            put(UInt8(ascii: "}"))
        }
        put(UInt8(ascii: "}"))
    }

    /// Reopens the `fields` object just written to add each of `names` as
    /// `"name":{"value":null}`; `afterAny` says whether it holds fields already.
    private mutating func appendClearedFields(_ names: [String], afterAny: Bool) {
        length -= 1  // The object's closing brace.
        for index in names.indices {
            if index > 0 || afterAny { put(UInt8(ascii: ",")) }
            putString(names[index])
            put(WireText.clearedValue)
        }
        put(UInt8(ascii: "}"))
    }

    /// Appends fields held as wire text: the text itself when it is what
    /// this writer writes, else field by field, copying what is canonical
    /// and writing the rest from its value. A value that was read but that
    /// the writer refuses (a timestamp so far out that its date no longer
    /// converts back to milliseconds) throws, naming the field.
    private mutating func writeFields(_ wire: WireFields) throws(WireFormatError) {
        let mark = length
        var failure: WireFormatError?
        wire.withSlots { slots, text in
            if wire.isCanonical {
                put(text)
                return
            }
            put(UInt8(ascii: "{"))
            for i in slots.indices {
                let slot = slots[i]
                if i > 0 { put(UInt8(ascii: ",")) }
                put(JSONText.quote)
                let name = UnsafeBufferPointer(
                    rebasing: text[Int(slot.nameStart)..<Int(slot.nameStart + slot.nameCount)])
                put(name)
                put(JSONText.quote)
                if slot.isCanonical {
                    put(WireText.fieldPrefix(slot.type))
                    put(UnsafeBufferPointer(rebasing: text[Int(slot.valueStart)..<Int(slot.valueEnd)]))
                } else {
                    do throws(WireFormatError) {
                        try writeValue(WireFields.value(slot, in: text))
                    } catch {
                        let field = String(decoding: name, as: UTF8.self)
                        failure = WireFormatError(
                            error.code, offset: nil, message: "field '\(field)': \(error.message)")
                        return
                    }
                }
                put(UInt8(ascii: "}"))
            }
            put(UInt8(ascii: "}"))
        }
        if let failure {
            length = mark
            throw failure
        }
    }

    /// Appends what follows a field's name: `:{"type":…,"value":` and the
    /// wire encoding of the value (the closing brace is the caller's).
    mutating func writeValue(_ value: FieldValue) throws(WireFormatError) {
        put(WireText.fieldPrefix(value.type))
        try writeValueText(value)
    }

    /// Appends the wire encoding of `value` alone.
    mutating func writeValueText(_ value: FieldValue) throws(WireFormatError) {
        switch value {
        case .string(let string):
            putString(string)
        case .int64(let int):
            putInt(int)
        case .double(let double):
            try writeFiniteDouble(double, "DOUBLE value")
        case .timestamp(let date):
            try writeTimestamp(date)
        case .bytes(let data):
            data.withUnsafeBytes { putBase64($0) }
        case .reference(let reference):
            writeReference(reference)
        case .asset(let asset):
            writeAsset(asset)
        case .location(let location):
            try writeLocation(location)
        case .stringList(let list):
            writeList(list) { $0.putString($1) }
        case .int64List(let list):
            writeList(list) { $0.putInt($1) }
        case .doubleList(let list):
            try writeList(list) { (writer, double) throws(WireFormatError) in
                try writer.writeFiniteDouble(double, "DOUBLE_LIST element")
            }
        case .timestampList(let list):
            try writeList(list) { (writer, date) throws(WireFormatError) in try writer.writeTimestamp(date) }
        case .bytesList(let list):
            writeList(list) { writer, data in data.withUnsafeBytes { writer.putBase64($0) } }
        case .referenceList(let list):
            writeList(list) { $0.writeReference($1) }
        case .assetList(let list):
            writeList(list) { $0.writeAsset($1) }
        case .locationList(let list):
            try writeList(list) { (writer, location) throws(WireFormatError) in
                try writer.writeLocation(location)
            }
        }
    }

    @inline(__always)
    private mutating func writeList<Element, Failure: Error>(
        _ list: [Element], _ writeElement: (inout JSONWriter, Element) throws(Failure) -> Void
    ) throws(Failure) {
        put(UInt8(ascii: "["))
        for index in list.indices {
            if index > 0 { put(UInt8(ascii: ",")) }
            try writeElement(&self, list[index])
        }
        put(UInt8(ascii: "]"))
    }

    private mutating func writeFiniteDouble(_ value: Double, _ what: StaticString) throws(WireFormatError) {
        guard value.isFinite else {
            throw WireFormatError(.invalidValue, message: "\(what) \(value) is not finite; JSON cannot hold it")
        }
        putDouble(value)
    }

    private mutating func writeTimestamp(_ date: Date) throws(WireFormatError) {
        guard let milliseconds = Milliseconds.exact(date) else {
            throw WireFormatError(
                .invalidValue,
                message: "TIMESTAMP \(date.timeIntervalSince1970) s since 1970 does not fit in Int64 milliseconds")
        }
        putInt(milliseconds)
    }

    /// Appends `{"timestamp":…,"userRecordName":…,"deviceID":…}`.
    mutating func writeStamp(_ stamp: RecordStamp) {
        put(WireText.stampOpen)
        putInt(stamp.timestamp)
        if let user = stamp.userRecordName {
            put(WireText.userRecordName)
            putString(user)
        }
        if let device = stamp.deviceID {
            put(WireText.deviceID)
            putString(device)
        }
        put(UInt8(ascii: "}"))
    }

    /// Appends `{"zoneName":…,"ownerRecordName":…}`, the owner only when set.
    mutating func writeZoneID(_ zone: ZoneID) {
        put(WireText.zoneOpen)
        putString(zone.zoneName)
        if let owner = zone.ownerRecordName {
            put(WireText.ownerRecordName)
            putString(owner)
        }
        put(UInt8(ascii: "}"))
    }

    private mutating func writeReference(_ reference: Reference) {
        put(WireText.referenceOpen)
        putString(reference.recordName)
        if let zone = reference.zoneID {
            put(WireText.referenceZoneID)
            writeZoneID(zone)
        }
        put(WireText.referenceAction)
        put(WireText.action(reference.action))
        put(UInt8(ascii: "}"))
    }

    private mutating func writeAsset(_ asset: Asset) {
        put(UInt8(ascii: "{"))
        var first = true
        func separate(_ writer: inout JSONWriter) {
            if first { first = false } else { writer.put(UInt8(ascii: ",")) }
        }
        if let checksum = asset.fileChecksum {
            separate(&self)
            put(WireText.fileChecksum)
            putString(checksum)
        }
        if let size = asset.size {
            separate(&self)
            put(WireText.size)
            putInt(size)
        }
        if let checksum = asset.referenceChecksum {
            separate(&self)
            put(WireText.referenceChecksum)
            putString(checksum)
        }
        if let key = asset.wrappingKey {
            separate(&self)
            put(WireText.wrappingKey)
            putString(key)
        }
        if let receipt = asset.receipt {
            separate(&self)
            put(WireText.receipt)
            putString(receipt)
        }
        if let url = asset.downloadURL {
            separate(&self)
            put(WireText.downloadURL)
            putString(url)
        }
        put(UInt8(ascii: "}"))
    }

    private mutating func writeLocation(_ location: Location) throws(WireFormatError) {
        put(WireText.locationOpen)
        try writeFiniteDouble(location.latitude, "LOCATION latitude")
        put(WireText.longitude)
        try writeFiniteDouble(location.longitude, "LOCATION longitude")
        if let value = location.horizontalAccuracy {
            put(WireText.horizontalAccuracy)
            try writeFiniteDouble(value, "LOCATION horizontalAccuracy")
        }
        if let value = location.verticalAccuracy {
            put(WireText.verticalAccuracy)
            try writeFiniteDouble(value, "LOCATION verticalAccuracy")
        }
        if let value = location.altitude {
            put(WireText.altitude)
            try writeFiniteDouble(value, "LOCATION altitude")
        }
        if let value = location.speed {
            put(WireText.speed)
            try writeFiniteDouble(value, "LOCATION speed")
        }
        if let value = location.course {
            put(WireText.course)
            try writeFiniteDouble(value, "LOCATION course")
        }
        if let timestamp = location.timestamp {
            put(WireText.locationTimestamp)
            putInt(timestamp)
        }
        put(UInt8(ascii: "}"))
    }
}
