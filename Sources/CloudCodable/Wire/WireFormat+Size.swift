import Foundation

extension WireFormat {
    /// The exact number of bytes the `fields` object of a record takes as
    /// ``JSONWriter/writeRecord(_:)`` writes it: the whole `{…}` after
    /// `"fields":`, braces included.
    ///
    /// Much cheaper than writing: it allocates nothing, scans strings only for
    /// characters that need escaping, and computes base64 lengths by formula.
    /// A value the writer refuses (a double that is not finite, a date out of
    /// range) counts as 4 bytes, like `null`.
    ///
    /// ```swift
    /// if WireFormat.encodedSize(ofFields: record.fields) > 1_048_576 { … }
    /// ```
    public static func encodedSize(ofFields fields: RecordFields) -> Int {
        fieldsSize(fields, ExactSize.self)
    }

    /// An upper bound of ``encodedSize(ofFields:)`` that is cheaper still:
    /// O(1) for each scalar field (every string byte counted as a six-byte
    /// escape, every number at its longest). Never less than the exact size.
    static func maximumEncodedSize(ofFields fields: RecordFields) -> Int {
        fieldsSize(fields, MaximumSize.self)
    }

    private static func fieldsSize<Rule: SizeRule>(_ fields: RecordFields, _: Rule.Type) -> Int {
        if let wire = fields.wire { return wireFieldsSize(wire, Rule.self) }
        // The braces, and a comma between fields.
        var size = 2 + max(fields.entries.count - 1, 0)
        fields.entries.withUnsafeBufferPointer { entries in
            for entry in entries {
                size += Rule.string(entry.name) + WireText.fieldPrefix(entry.value.type).utf8CodeUnitCount
                size += valueSize(entry.value, Rule.self) + 1
            }
        }
        return size
    }

    /// The size of fields held as wire text, as the writer writes them:
    /// canonical text counts as it is.
    private static func wireFieldsSize<Rule: SizeRule>(_ wire: WireFields, _: Rule.Type) -> Int {
        wire.withSlots { slots, text in
            if wire.isCanonical { return text.count }
            var size = 2 + max(slots.count - 1, 0)
            for slot in slots {
                // Names are kept only when they need no escapes.
                size += Int(slot.nameCount) + 2 + WireText.fieldPrefix(slot.type).utf8CodeUnitCount + 1
                if slot.isCanonical {
                    size += Int(slot.valueEnd - slot.valueStart)
                } else {
                    size += valueSize(WireFields.value(slot, in: text), Rule.self)
                }
            }
            return size
        }
    }

    private static func valueSize<Rule: SizeRule>(_ value: FieldValue, _: Rule.Type) -> Int {
        switch value {
        case .string(let string): Rule.string(string)
        case .int64(let int): Rule.integer(int)
        case .double(let double): Rule.double(double)
        case .timestamp(let date): Rule.timestamp(date)
        case .bytes(let data): Base64.encodedCount(data.count) + 2
        case .reference(let reference): referenceSize(reference, Rule.self)
        case .asset(let asset): assetSize(asset, Rule.self)
        case .location(let location): locationSize(location, Rule.self)
        case .stringList(let list): listSize(list) { Rule.string($0) }
        case .int64List(let list): listSize(list) { Rule.integer($0) }
        case .doubleList(let list): listSize(list) { Rule.double($0) }
        case .timestampList(let list): listSize(list) { Rule.timestamp($0) }
        case .bytesList(let list): listSize(list) { Base64.encodedCount($0.count) + 2 }
        case .referenceList(let list): listSize(list) { referenceSize($0, Rule.self) }
        case .assetList(let list): listSize(list) { assetSize($0, Rule.self) }
        case .locationList(let list): listSize(list) { locationSize($0, Rule.self) }
        }
    }

    @inline(__always)
    private static func listSize<Element>(_ list: [Element], _ elementSize: (Element) -> Int) -> Int {
        var size = 2 + max(list.count - 1, 0)
        for element in list { size += elementSize(element) }
        return size
    }

    private static func zoneSize<Rule: SizeRule>(_ zone: ZoneID, _: Rule.Type) -> Int {
        var size = WireText.zoneOpen.utf8CodeUnitCount + Rule.string(zone.zoneName) + 1
        if let owner = zone.ownerRecordName {
            size += WireText.ownerRecordName.utf8CodeUnitCount + Rule.string(owner)
        }
        return size
    }

    private static func referenceSize<Rule: SizeRule>(_ reference: Reference, _: Rule.Type) -> Int {
        var size = WireText.referenceOpen.utf8CodeUnitCount + Rule.string(reference.recordName)
        if let zone = reference.zoneID {
            size += WireText.referenceZoneID.utf8CodeUnitCount + zoneSize(zone, Rule.self)
        }
        size += WireText.referenceAction.utf8CodeUnitCount
        size += WireText.action(reference.action).utf8CodeUnitCount + 1
        return size
    }

    private static func assetSize<Rule: SizeRule>(_ asset: Asset, _: Rule.Type) -> Int {
        var size = 2
        var members = 0
        if let checksum = asset.fileChecksum {
            size += WireText.fileChecksum.utf8CodeUnitCount + Rule.string(checksum)
            members += 1
        }
        if let bytes = asset.size {
            size += WireText.size.utf8CodeUnitCount + Rule.integer(bytes)
            members += 1
        }
        if let checksum = asset.referenceChecksum {
            size += WireText.referenceChecksum.utf8CodeUnitCount + Rule.string(checksum)
            members += 1
        }
        if let key = asset.wrappingKey {
            size += WireText.wrappingKey.utf8CodeUnitCount + Rule.string(key)
            members += 1
        }
        if let receipt = asset.receipt {
            size += WireText.receipt.utf8CodeUnitCount + Rule.string(receipt)
            members += 1
        }
        if let url = asset.downloadURL {
            size += WireText.downloadURL.utf8CodeUnitCount + Rule.string(url)
            members += 1
        }
        return size + max(members - 1, 0)
    }

    private static func locationSize<Rule: SizeRule>(_ location: Location, _: Rule.Type) -> Int {
        var size = WireText.locationOpen.utf8CodeUnitCount + Rule.double(location.latitude)
        size += WireText.longitude.utf8CodeUnitCount + Rule.double(location.longitude) + 1
        if let value = location.horizontalAccuracy {
            size += WireText.horizontalAccuracy.utf8CodeUnitCount + Rule.double(value)
        }
        if let value = location.verticalAccuracy {
            size += WireText.verticalAccuracy.utf8CodeUnitCount + Rule.double(value)
        }
        if let value = location.altitude {
            size += WireText.altitude.utf8CodeUnitCount + Rule.double(value)
        }
        if let value = location.speed {
            size += WireText.speed.utf8CodeUnitCount + Rule.double(value)
        }
        if let value = location.course {
            size += WireText.course.utf8CodeUnitCount + Rule.double(value)
        }
        if let timestamp = location.timestamp {
            size += WireText.locationTimestamp.utf8CodeUnitCount + Rule.integer(timestamp)
        }
        return size
    }
}

/// How ``WireFormat`` counts the bytes of one scalar.
private protocol SizeRule {
    /// A string with its quotes.
    static func string(_ string: String) -> Int
    static func integer(_ value: Int64) -> Int
    static func double(_ value: Double) -> Int
    static func timestamp(_ date: Date) -> Int
}

/// The exact count, as the writer writes.
private enum ExactSize: SizeRule {
    static func string(_ string: String) -> Int { JSONText.quotedLength(string) }
    static func integer(_ value: Int64) -> Int { JSONText.integerLength(value) }
    static func double(_ value: Double) -> Int { JSONText.doubleLength(value) }
    static func timestamp(_ date: Date) -> Int {
        Milliseconds.exact(date).map(JSONText.integerLength) ?? 4
    }
}

/// A bound that never under-counts, in O(1).
private enum MaximumSize: SizeRule {
    /// Every byte escaped as `\u00XX`.
    static func string(_ string: String) -> Int { string.utf8.count * 6 + 2 }
    /// `-9223372036854775808`.
    static func integer(_ value: Int64) -> Int { 20 }
    /// The shortest round-trip text of a double is at most 24 bytes
    /// (`-2.2250738585072014e-308`); the standard library's buffer is 32.
    static func double(_ value: Double) -> Int { 32 }
    static func timestamp(_ date: Date) -> Int { 20 }
}
