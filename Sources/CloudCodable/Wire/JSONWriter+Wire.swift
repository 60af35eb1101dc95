extension JSONWriter {
    /// Appends `{"zoneName":…,"ownerRecordName":…}`, the owner only when set,
    /// as the record dictionary writes its zone.
    package mutating func appendZoneID(_ zone: ZoneID) {
        makeUnique()
        writeZoneID(zone)
    }

    /// Appends a field's `{"type":…,"value":…}` object, as a record's fields
    /// hold it (a query's `fieldValue`).
    ///
    /// - Throws: `WireFormatError` (`.invalidValue`) for a value JSON cannot
    ///   hold; the writer is then left as it was.
    package mutating func appendFieldValue(_ value: FieldValue) throws {
        makeUnique()
        let start = length
        do throws(WireFormatError) {
            // The prefix starts with the colon that follows a field's name.
            let prefix = WireText.fieldPrefix(value.type)
            prefix.withUTF8Buffer { put(UnsafeBufferPointer(rebasing: $0.dropFirst())) }
            try writeValueText(value)
            put(UInt8(ascii: "}"))
        } catch {
            length = start
            throw error
        }
    }
}
