import Foundation

/// Reads CloudKit Web Services record dictionaries straight from bytes into
/// ``Record`` values, without a JSON tree.
///
/// Keys are recognised from their bytes and may come in any order; unknown
/// keys are skipped (checked, not built). A field's `value` may come before
/// its `type`: the reader then remembers where the value starts, skips it,
/// and reads it once the type is known.
///
/// Nesting: the known structure of a record is at most six levels deep; the
/// 512 limit applies to the values of unknown keys, which are skipped.
struct WireRecordReader {
    var scanner: JSONScanner
    /// The types of fields sent without `type`, by record type and field
    /// name; consulted before the value's JSON shape. `nil` for the shape alone.
    var fieldTypes: ((String, String) -> FieldType?)?
    /// Whether a record dictionary with `serverErrorCode` is an error entry:
    /// ``readRecord(depth:deletion:)`` then sets ``sawErrorEntry`` instead
    /// of requiring the keys of a record.
    var detectsErrorEntries = false
    /// Set when the last record read was an error entry (see ``detectsErrorEntries``).
    var sawErrorEntry = false
    /// Whether a record without `recordType` is read with an empty type (the
    /// record of a delete operation holds only its name).
    var allowsMissingRecordType = false
    /// Whether a record without `recordName` is read with an empty name
    /// (the record of a create operation, which the server names).
    var allowsMissingRecordName = false
    /// Whether the last record read had a `zoneID` (a record without one
    /// belongs to the zone its request names).
    var lastRecordHadZoneID = false
    /// When not `nil`, a field whose value is `null` is not absent but
    /// cleared, as an update of Cumulus's dialect says it: its name is added
    /// here (once) instead of removing a value given before it.
    var clearedFields: [String]?
    /// Names that repeat from record to record (users, devices, zone
    /// owners): the records of one body share a copy of each.
    private var repeatedNames = RepeatedNames()

    init(_ bytes: UnsafeRawBufferPointer) {
        scanner = JSONScanner(bytes)
    }

    /// Reads a document that holds one record dictionary (or a deleted
    /// record's entry) and nothing else.
    mutating func readEntryDocument() throws(WireFormatError) -> WireRecordEntry {
        var deletion: Deletion?
        let record = try readRecord(depth: 0, deletion: &deletion)
        try scanner.expectEnd()
        if let deletion { return .deleted(recordName: deletion.recordName, zoneID: deletion.zoneID) }
        return .record(record)
    }

    /// Reads a document that holds one record dictionary and nothing else.
    mutating func readRecordDocument() throws(WireFormatError) -> Record {
        var deletion: Deletion?
        let record = try readRecord(depth: 0, deletion: &deletion)
        if let deletion {
            throw scanner.error(
                .invalidValue, at: 0,
                "expected a record, found the entry of deleted record '\(deletion.recordName)'")
        }
        try scanner.expectEnd()
        return record
    }

    // MARK: - Records

    /// What an entry of a deleted record says.
    struct Deletion {
        var recordName: String
        var zoneID: ZoneID?
    }

    /// Reads the record dictionary at the cursor; `depth` is the number of
    /// arrays and objects open around it. For the entry of a deleted record
    /// (`"deleted": true`) it sets `deletion` and returns a placeholder.
    mutating func readRecord(depth: Int, deletion: inout Deletion?) throws(WireFormatError) -> Record {
        _ = try scanner.peek("a record object")
        let start = scanner.position
        if var record = readRecordInWriterForm(depth: depth) {
            if scanner.consume("}") { return record }
            // A child's parent is common enough to read here; a share's keys go the general way.
            if let parent = readParentInWriterForm() {
                record.parent = parent
                return record
            }
        }
        scanner.position = start
        return try readRecordInAnyForm(depth: depth, start: start, deletion: &deletion)
    }

    /// ``readRecord(depth:deletion:)`` for any layout, from the record's
    /// opening brace at `start`. Kept apart, and not inlined, so that the
    /// fast path does not carry the frame of everything read here.
    @inline(never)
    private mutating func readRecordInAnyForm(depth: Int, start: Int, deletion: inout Deletion?)
        throws(WireFormatError) -> Record
    {
        var recordName: String?
        var recordType: String?
        var changeTag: String?
        var fields = RecordFields()
        var created: RecordStamp?
        var modified: RecordStamp?
        var zoneID: ZoneID?
        var deleted = false
        var isErrorEntry = false
        var relations = Relations()
        var fieldContext = FieldContext(recordStart: start)
        if try scanner.enterObject("a record object") {
            repeat {
                let key = try nextKey { scanner in
                    if scanner.consume(#""recordName":"#) { return .recordName }
                    if scanner.consume(#""recordType":"#) { return .recordType }
                    if scanner.consume(#""recordChangeTag":"#) { return .recordChangeTag }
                    if scanner.consume(#""fields":"#) { return .fields }
                    if scanner.consume(#""created":"#) { return .created }
                    if scanner.consume(#""modified":"#) { return .modified }
                    if scanner.consume(#""zoneID":"#) { return .zoneID }
                    return nil
                }
                switch key {
                case .recordName:
                    recordName = try context("recordName") { (r) throws(WireFormatError) in try r.scanner.readString() }
                case .recordType:
                    recordType = try context("recordType") { (r) throws(WireFormatError) in try r.scanner.readString() }
                    fieldContext.recordType = recordType
                case .recordChangeTag:
                    changeTag = try context("recordChangeTag") { (r) throws(WireFormatError) in
                        try r.scanner.skipNull() ? nil : r.scanner.readString()
                    }
                case .fields:
                    fields = try readFields(depth: depth + 1, context: &fieldContext)
                case .created:
                    created = try context("created") { (r) throws(WireFormatError) in
                        try r.scanner.skipNull() ? nil : r.readStamp(depth: depth + 1)
                    }
                case .modified:
                    modified = try context("modified") { (r) throws(WireFormatError) in
                        try r.scanner.skipNull() ? nil : r.readStamp(depth: depth + 1)
                    }
                case .zoneID:
                    zoneID = try context("zoneID") { (r) throws(WireFormatError) in
                        try r.scanner.skipNull() ? nil : r.readZoneID(depth: depth + 1)
                    }
                case .deleted:
                    deleted = try context("deleted") { (r) throws(WireFormatError) in try r.scanner.readBool() }
                case .serverErrorCode:
                    isErrorEntry = detectsErrorEntries
                    try scanner.skipValue(depth: depth + 1)
                case .parent, .share, .shortGUID, .publicPermission, .participants, .owner, .currentUserParticipant,
                    .url:
                    try readRelation(key, into: &relations, depth: depth + 1)
                default:
                    try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        lastRecordHadZoneID = zoneID != nil
        if isErrorEntry {
            sawErrorEntry = true
            return Record(recordType: "", recordName: recordName ?? "")
        }
        guard let recordName = recordName ?? (allowsMissingRecordName ? "" : nil) else {
            throw scanner.error(.missingKey, at: start, "record has no 'recordName'")
        }
        if deleted {
            deletion = Deletion(recordName: recordName, zoneID: zoneID)
            return Record(recordType: "", recordName: recordName)
        }
        guard let recordType = recordType ?? (allowsMissingRecordType ? "" : nil) else {
            throw scanner.error(.missingKey, at: start, "record '\(recordName)' has no 'recordType'")
        }
        let zone = zoneID ?? .defaultZone
        let metadata = changeTag.map {
            RecordMetadata(changeTag: $0, zoneID: zone, created: created, modified: modified)
        }
        var record = Record(
            recordType: recordType, recordName: recordName, zoneID: zone, fields: fields, metadata: metadata)
        if !relations.isEmpty { relations.apply(to: &record) }
        return record
    }

    /// Reads a record dictionary laid out exactly as the writer writes it
    /// (keys in its order, no whitespace, no unknown keys; see
    /// ``JSONWriter/writeRecord(_:)``) without looking up any key, or returns
    /// `nil` for anything else, which the general reader then reads from
    /// the start. Its values are checked as strictly as ever, and errors in
    /// them are thrown as the general reader would throw them. It stops
    /// after the zone: what follows (the closing brace, or a parent) is the
    /// caller's, so that the record is built here exactly once, without
    /// a branch after it that makes the optimiser copy its stamps.
    private mutating func readRecordInWriterForm(depth: Int) -> Record? {
        guard scanner.consume(#"{"recordName":""#) else { return nil }
        scanner.position &-= 1
        guard let recordName = readPlainString(), scanner.consume(#","recordType":""#) else { return nil }
        scanner.position &-= 1
        guard let recordType = readPlainString() else { return nil }
        var changeTag: String?
        if scanner.consume(#","recordChangeTag":""#) {
            scanner.position &-= 1
            guard let tag = readPlainString() else { return nil }
            changeTag = tag
        }
        guard scanner.consume(#","fields":"#) else { return nil }
        let fields: RecordFields
        if let wire = readFieldsAsWireText() {
            fields = RecordFields(wire: wire)
        } else {
            return nil
        }
        var created: RecordStamp?
        var modified: RecordStamp?
        if scanner.consume(#","created":{"timestamp":"#) {
            guard let stamp = readStampInWriterForm() else { return nil }
            created = stamp
        }
        if scanner.consume(#","modified":{"timestamp":"#) {
            guard let stamp = readStampInWriterForm() else { return nil }
            modified = stamp
        }
        guard scanner.consume(#","zoneID":{"zoneName":""#) else { return nil }
        scanner.position &-= 1
        guard let zoneName = readPlainRepeatedName() else { return nil }
        var owner: String?
        if scanner.consume(#","ownerRecordName":""#) {
            scanner.position &-= 1
            guard let name = readPlainRepeatedName() else { return nil }
            owner = name
        }
        // The record's closing brace is the caller's: a parent may come first.
        guard scanner.consume("}") else { return nil }
        lastRecordHadZoneID = true
        let zone = ZoneID(zoneName: zoneName, ownerRecordName: owner)
        var metadata: RecordMetadata?
        if let changeTag {
            metadata = RecordMetadata(changeTag: changeTag, zoneID: zone, created: created, modified: modified)
        }
        return Record(recordType: recordType, recordName: recordName, zoneID: zone, fields: fields, metadata: metadata)
    }

    /// The rest of a record in the writer's form that has a parent, after
    /// its zone: `,"parent":{"recordName":…}}`.
    @inline(never)
    private mutating func readParentInWriterForm() -> String? {
        guard scanner.consume(#","parent":{"recordName":""#) else { return nil }
        scanner.position &-= 1
        guard let name = readPlainString(), scanner.consume("}}") else { return nil }
        return name
    }

    /// The rest of a stamp in the writer's form, after `{"timestamp":`.
    private mutating func readStampInWriterForm() -> RecordStamp? {
        guard let timestamp = scanner.scanInt64() else { return nil }
        var user: String?
        var device: String?
        if scanner.consume(#","userRecordName":""#) {
            scanner.position &-= 1
            guard let name = readPlainRepeatedName() else { return nil }
            user = name
        }
        if scanner.consume(#","deviceID":""#) {
            scanner.position &-= 1
            guard let id = readPlainRepeatedName() else { return nil }
            device = id
        }
        guard scanner.consume("}") else { return nil }
        return RecordStamp(timestamp: timestamp, userRecordName: user, deviceID: device)
    }

    /// The string at the cursor when it is valid; `nil` otherwise (the
    /// general reader then reports what is wrong).
    @inline(__always)
    private mutating func readPlainString() -> String? {
        guard let span = try? scanner.scanString() else { return nil }
        return try? scanner.string(span)
    }

    /// ``readPlainString()`` for a name that repeats from record to record.
    private mutating func readPlainRepeatedName() -> String? {
        guard let span = try? scanner.scanString() else { return nil }
        return try? repeatedName(span)
    }

    /// A string read as a repeated name, in either reader.
    private mutating func readRepeatedName() throws(WireFormatError) -> String {
        guard try scanner.peek("a string") == JSONText.quote else { throw scanner.unexpected("a string") }
        return try repeatedName(try scanner.scanString())
    }

    private mutating func readOptionalRepeatedName() throws(WireFormatError) -> String? {
        try scanner.skipNull() ? nil : readRepeatedName()
    }

    private mutating func repeatedName(_ span: JSONScanner.StringSpan) throws(WireFormatError) -> String {
        try scanner.validate(span)
        var names = RepeatedNames()
        swap(&names, &repeatedNames)
        defer { swap(&names, &repeatedNames) }
        return scanner.withContents(of: span) { names.string($0) }
    }

    /// Reads the next member's key and its colon. `fast` tries the keys the
    /// object usually has, in the compact form the writer produces; any other
    /// spelling goes the general way. An unknown key is checked for valid UTF-8.
    @inline(__always)
    mutating func nextKey(_ fast: (inout JSONScanner) -> WireKey?) throws(WireFormatError) -> WireKey {
        if let key = fast(&scanner) { return key }
        let span = try scanner.memberKey()
        let key = scanner.withContents(of: span, WireKey.match)
        if key == .unknown { try scanner.validate(span) }
        return key
    }

    /// Runs `body`, prefixing the message of its error with `what`.
    @inline(__always)
    mutating func context<T>(
        _ what: @autoclosure () -> String, _ body: (inout Self) throws(WireFormatError) -> T
    ) throws(WireFormatError) -> T {
        do {
            return try body(&self)
        } catch {
            throw WireFormatError(error.code, offset: error.offset, message: "\(what()): \(error.message)")
        }
    }

    // MARK: - Fields

    /// What the fields of a record need to know for a field without `type`:
    /// the record's type, read or (when it comes after `fields`) looked ahead for.
    struct FieldContext {
        /// The offset of the record's opening brace.
        var recordStart: Int
        /// The record's type, once known.
        var recordType: String?
        /// Whether the record was already searched for its type.
        var lookedAhead = false
    }

    /// The record type for a typeless field: as read, else the `recordType`
    /// member found by skimming the record from its start ("" when absent).
    mutating func recordType(for context: inout FieldContext) -> String {
        if let type = context.recordType { return type }
        if context.lookedAhead { return "" }
        context.lookedAhead = true
        var skimmer = scanner
        skimmer.position = context.recordStart
        guard (try? skimmer.enterObject("a record object")) == true else { return "" }
        while let span = try? skimmer.memberKey() {
            if skimmer.withContents(of: span, { WireKey.match($0) == .recordType }) {
                context.recordType = try? skimmer.readString()
                return context.recordType ?? ""
            }
            guard (try? skimmer.skipValue(depth: 1)) != nil, (try? skimmer.nextMember()) == true else { break }
        }
        return ""
    }

    /// Reads the `fields` object. A name given twice keeps its last value;
    /// a `null` value removes the field, or clears it (see ``clearedFields``).
    private mutating func readFields(depth: Int, context fieldContext: inout FieldContext) throws(WireFormatError)
        -> RecordFields
    {
        if try scanner.skipNull() { return RecordFields() }
        let start = scanner.position
        if let wire = readFieldsAsWireText() { return RecordFields(wire: wire) }
        scanner.position = start
        guard try scanner.enterObject("the 'fields' object") else { return RecordFields() }
        var fields = RecordFields(minimumCapacity: 8)
        var seen = FieldNameSummary()
        repeat {
            let name = try scanner.string(scanner.memberKey())
            let value = try context("field '\(name)'") { (r) throws(WireFormatError) in
                try r.readField(depth: depth + 1, name: name, context: &fieldContext)
            }
            if let value {
                fields.set(value, forKey: name, seen: &seen)
            } else if clearedFields != nil {
                // A name with a value as well stays in both, for the operation to be refused.
                if clearedFields?.contains(where: { $0.utf8.elementsEqual(name.utf8) }) == false {
                    clearedFields?.append(name)
                }
            } else if seen.contains(FieldNameSummary.bit(of: name)) {
                fields.removeValue(forKey: name)
            }
        } while try scanner.nextMember()
        return fields
    }

    /// Reads the `fields` object at the cursor as wire text (see
    /// ``WireFields``) when it is in the compact form the writer produces,
    /// every name is unescaped and given once, and every value has a type
    /// the table can describe. Returns `nil`, with the cursor anywhere, for
    /// anything else, and for anything wrong: the general reader then reads
    /// the object again and reports what it finds.
    private mutating func readFieldsAsWireText() -> WireFields? {
        let start = scanner.position
        guard scanner.consume("{") else { return nil }
        // Most records fit the table on the stack; larger ones go on in an array.
        return withUnsafeTemporaryAllocation(of: WireFields.Slot.self, capacity: 24) { stack -> WireFields? in
            var count = 0
            var heap: [WireFields.Slot] = []
            var seen = FieldNameSummary()
            if !scanner.consume("}") {
                repeat {
                    guard let slot = readFieldAsWireText(start: start) else { return nil }
                    // A name given twice goes the general way (the last value wins there).
                    let bit = summaryBit(of: slot, from: start)
                    if seen.contains(bit) {
                        let seenBefore =
                            heap.isEmpty
                            ? hasName(of: slot, among: UnsafeBufferPointer(rebasing: stack[0..<count]), from: start)
                            : heap.withUnsafeBufferPointer { hasName(of: slot, among: $0, from: start) }
                        if seenBefore { return nil }
                    }
                    seen.insert(bit)
                    if count < stack.count {
                        stack[count] = slot
                    } else {
                        if heap.isEmpty { heap.append(contentsOf: stack) }
                        heap.append(slot)
                    }
                    count &+= 1
                    if scanner.consume("}") { break }
                    guard scanner.consume(",") else { return nil }
                } while true
            }
            let end = scanner.position
            guard end - start <= WireFields.maximumTextCount else { return nil }
            let text = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(scanner.bytes)[start..<end])
            if !heap.isEmpty {
                return heap.withUnsafeBufferPointer { WireFields.make(slots: $0, text: text, isCanonical: false) }
            }
            return WireFields.make(
                slots: UnsafeBufferPointer(rebasing: stack[0..<count]), text: text, isCanonical: false)
        }
    }

    /// Reads `"name":{"type":"T","value":V}` as a slot whose offsets count
    /// from `start`, checking the value as ``readValue(_:depth:)`` would.
    @inline(__always)
    private mutating func readFieldAsWireText(start: Int) -> WireFields.Slot? {
        guard scanner.position < scanner.bytes.count, scanner.bytes[scanner.position] == JSONText.quote,
            let name = try? scanner.scanString(), !name.isEscaped, (try? scanner.validate(name)) != nil,
            let type = scanner.consumeFieldPrefix()
        else { return nil }
        let valueStart = scanner.position
        guard let (scalar, isCanonical) = checkValueAsWireText(type) else { return nil }
        let valueEnd = scanner.position
        guard scanner.consume("}") else { return nil }
        return WireFields.Slot(
            nameStart: Int32(truncatingIfNeeded: name.start &- start),
            nameCount: Int32(truncatingIfNeeded: name.end &- name.start),
            valueStart: Int32(truncatingIfNeeded: valueStart &- start),
            valueEnd: Int32(truncatingIfNeeded: valueEnd &- start),
            scalar: scalar, type: type, isCanonical: isCanonical)
    }

    /// Checks the value of `type` at the cursor without building it, as
    /// strictly as ``readValue(_:depth:)`` reads it; returns its scalar bits
    /// (integers and doubles) and whether its text is the writer's, or `nil`
    /// for what only the general reader takes (nulls, numbers as strings,
    /// escaped base64, references, assets and locations) and for errors.
    @inline(__always)
    private mutating func checkValueAsWireText(_ type: FieldType) -> (UInt64, Bool)? {
        switch type {
        case .string:
            guard let isCanonical = checkString() else { return nil }
            return (0, isCanonical)
        case .int64, .timestamp:
            guard let (value, isCanonical) = checkInteger() else { return nil }
            return (UInt64(bitPattern: value), isCanonical)
        case .double:
            guard let value = checkDouble() else { return nil }
            return (value.bitPattern, false)
        case .bytes:
            guard let isCanonical = checkBase64() else { return nil }
            return (0, isCanonical)
        case .stringList:
            let start = scanner.position
            var plain = true
            var strings = 0
            var stringBytes = 0
            guard
                checkList({ reader in
                    let before = reader.scanner.position
                    guard let unescaped = reader.checkString() else { return false }
                    plain = plain && unescaped
                    strings &+= 1
                    stringBytes &+= reader.scanner.position &- before
                    return true
                })
            else { return nil }
            // As the writer writes it: no escapes, and nothing but the strings,
            // the brackets and the commas between them (so no whitespace).
            let compact = 2 &+ stringBytes &+ max(strings &- 1, 0)
            return (0, plain && scanner.position &- start == compact)
        case .int64List, .timestampList:
            return checkList { $0.checkInteger() != nil } ? (0, false) : nil
        case .doubleList:
            return checkList { $0.checkDouble() != nil } ? (0, false) : nil
        case .bytesList:
            return checkList { $0.checkBase64() != nil } ? (0, false) : nil
        case .reference, .asset, .location, .referenceList, .assetList, .locationList:
            return nil
        }
    }

    /// A string; whether it has no escapes (and so is as the writer writes it).
    @inline(__always)
    private mutating func checkString() -> Bool? {
        guard scanner.position < scanner.bytes.count, scanner.bytes[scanner.position] == JSONText.quote,
            let span = try? scanner.scanString(), (try? scanner.validate(span)) != nil
        else { return nil }
        return !span.isEscaped
    }

    /// An integer that fits `Int64`; whether it is as the writer writes it.
    @inline(__always)
    private mutating func checkInteger() -> (Int64, Bool)? {
        guard scanner.position < scanner.bytes.count else { return nil }
        let first = scanner.bytes[scanner.position]
        if let value = scanner.scanInt64() {
            // "-0" is the only integer text the writer would write otherwise.
            return (value, !(value == 0 && first == UInt8(ascii: "-")))
        }
        guard first == UInt8(ascii: "-") || JSONScanner.isDigit(first),
            let number = try? scanner.scanNumber(), number.isInteger, let value = scanner.int64(number)
        else { return nil }
        return (value, true)
    }

    /// A finite double.
    @inline(__always)
    private mutating func checkDouble() -> Double? {
        guard scanner.position < scanner.bytes.count else { return nil }
        let first = scanner.bytes[scanner.position]
        guard first == UInt8(ascii: "-") || JSONScanner.isDigit(first), let number = try? scanner.scanNumber()
        else { return nil }
        let value = scanner.double(number)
        return value.isFinite ? value : nil
    }

    /// Unescaped base64; whether it is padded (as the writer writes it).
    @inline(__always)
    private mutating func checkBase64() -> Bool? {
        guard scanner.position < scanner.bytes.count, scanner.bytes[scanner.position] == JSONText.quote,
            let span = try? scanner.scanString(), !span.isEscaped
        else { return nil }
        let text = UnsafeBufferPointer(rebasing: scanner.bytes[span.start..<span.end])
        guard Base64.isValid(text) else { return nil }
        return text.count % 4 == 0
    }

    /// A list whose elements `element` checks.
    @inline(__always)
    private mutating func checkList(_ element: (inout Self) -> Bool) -> Bool {
        guard let isNotEmpty = try? scanner.enterArray("a list") else { return false }
        guard isNotEmpty else { return true }
        while true {
            guard (try? scanner.peek("a list element")) != nil, element(&self),
                let more = try? scanner.nextElement()
            else { return false }
            if !more { return true }
        }
    }

    /// The summary bit (see ``FieldNameSummary``)
    /// of the name of `slot`, whose offsets count from `start`.
    @inline(__always)
    private func summaryBit(of slot: WireFields.Slot, from start: Int) -> Int {
        let first = start &+ Int(slot.nameStart)
        return FieldNameSummary.bit(
            of: UnsafeBufferPointer(rebasing: scanner.bytes[first..<(first &+ Int(slot.nameCount))]))
    }

    /// Whether one of `slots` has the name of `slot`.
    private func hasName(of slot: WireFields.Slot, among slots: UnsafeBufferPointer<WireFields.Slot>, from start: Int)
        -> Bool
    {
        let bytes = scanner.bytes.baseAddress! + start
        for other in slots where other.nameCount == slot.nameCount {
            if JSONScanner.equal(bytes + Int(other.nameStart), bytes + Int(slot.nameStart), count: Int(slot.nameCount))
            {
                return true
            }
        }
        return false
    }

    /// Reads `{"type": …, "value": …}` in either order. A `null` value reads
    /// as `nil`: the field is absent.
    private mutating func readField(depth: Int, name: String, context: inout FieldContext) throws(WireFormatError)
        -> FieldValue?
    {
        // Fast path: the compact form the writer produces, {"type":"T","value":V}.
        let objectStart = scanner.position
        if scanner.consume(#"{"type":""#) {
            let nameStart = scanner.position
            var i = nameStart
            let bytes = scanner.bytes
            while i < bytes.count, bytes[i] != JSONText.quote, bytes[i] != JSONText.backslash { i += 1 }
            if i < bytes.count, bytes[i] == JSONText.quote,
                let type = WireKey.fieldType(UnsafeBufferPointer(rebasing: bytes[nameStart..<i]))
            {
                scanner.position = i + 1
                if scanner.consume(#","value":"#) {
                    let value = try readValue(type, depth: depth + 1)
                    if scanner.consume("}") { return value }
                }
            }
            // Anything else: read it again the general way.
            scanner.position = objectStart
        }
        return try readFieldInAnyForm(depth: depth, name: name, context: &context)
    }

    /// Reads `{"type": …, "value": …}` in any order and spacing, with
    /// unknown keys, or with the type missing.
    mutating func readFieldInAnyForm(depth: Int, name: String, context: inout FieldContext) throws(WireFormatError)
        -> FieldValue?
    {
        _ = try scanner.peek("a field object {\"type\": …, \"value\": …}")
        let start = scanner.position
        var type: FieldType?
        var value: FieldValue?
        var hasValue = false
        var skippedValue: Int?
        if try scanner.enterObject("a field object {\"type\": …, \"value\": …}") {
            repeat {
                let key = try nextKey { scanner in
                    if scanner.consume(#""type":"#) { return .type }
                    if scanner.consume(#""value":"#) { return .value }
                    return nil
                }
                switch key {
                case .type:
                    let newType = try readFieldType()
                    if let type, type != newType {
                        throw scanner.error(
                            .invalidValue, "conflicting types \(type.rawValue) and \(newType.rawValue)")
                    }
                    type = newType
                case .value:
                    if let type {
                        value = try readValue(type, depth: depth + 1)
                        skippedValue = nil
                    } else {
                        _ = try scanner.peek("a value")
                        skippedValue = scanner.position
                        try scanner.skipValue(depth: depth + 1)
                    }
                    hasValue = true
                default:
                    try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        guard hasValue else {
            throw scanner.error(.missingKey, at: start, "field has no 'value'")
        }
        guard let skippedValue else { return value }
        // The value came before the type (or there is no type): read it now.
        let end = scanner.position
        scanner.position = skippedValue
        let resolvedType: FieldType
        if let type {
            resolvedType = type
        } else if let fieldTypes, let known = fieldTypes(recordType(for: &context), name) {
            resolvedType = known
        } else if let inferred = try inferType(depth: depth + 1) {
            resolvedType = inferred
        } else {
            scanner.position = end
            return nil
        }
        value = try readValue(resolvedType, depth: depth + 1)
        scanner.position = end
        return value
    }

    private mutating func readFieldType() throws(WireFormatError) -> FieldType {
        guard try scanner.peek("a field type string") == JSONText.quote else {
            throw scanner.unexpected("a field type string")
        }
        let span = try scanner.scanString()
        if let type = scanner.withContents(of: span, WireKey.fieldType) { return type }
        let name = try scanner.string(span)
        throw scanner.error(.unknownFieldType, at: span.quote, "unknown field type '\(name)'")
    }

    /// Reads a value of `type`; `nil` for `null`.
    mutating func readValue(_ type: FieldType, depth: Int) throws(WireFormatError) -> FieldValue? {
        if try scanner.skipNull() { return nil }
        switch type {
        case .string:
            return .string(try scanner.readString())
        case .int64:
            return .int64(try readInt64())
        case .double:
            return .double(try readDouble())
        case .timestamp:
            return .timestamp(Milliseconds.date(try readMilliseconds()))
        case .bytes:
            return .bytes(try readBytes())
        case .reference:
            return .reference(try readReference(depth: depth))
        case .asset:
            return .asset(try readAsset(depth: depth))
        case .location:
            return .location(try readLocation(depth: depth))
        case .stringList:
            return .stringList(try readList { (r) throws(WireFormatError) in try r.scanner.readString() })
        case .int64List:
            return .int64List(try readList { (r) throws(WireFormatError) in try r.readInt64() })
        case .doubleList:
            return .doubleList(try readList { (r) throws(WireFormatError) in try r.readDouble() })
        case .timestampList:
            return .timestampList(
                try readList { (r) throws(WireFormatError) in Milliseconds.date(try r.readMilliseconds()) })
        case .bytesList:
            return .bytesList(try readList { (r) throws(WireFormatError) in try r.readBytes() })
        case .referenceList:
            return .referenceList(
                try readList { (r) throws(WireFormatError) in try r.readReference(depth: depth + 1) })
        case .assetList:
            return .assetList(try readList { (r) throws(WireFormatError) in try r.readAsset(depth: depth + 1) })
        case .locationList:
            return .locationList(
                try readList { (r) throws(WireFormatError) in try r.readLocation(depth: depth + 1) })
        }
    }

    @inline(__always)
    private mutating func readList<Element>(
        _ readElement: (inout Self) throws(WireFormatError) -> Element
    ) throws(WireFormatError) -> [Element] {
        guard try scanner.enterArray("a list") else { return [] }
        var list: [Element] = []
        list.reserveCapacity(4)
        repeat {
            do {
                list.append(try readElement(&self))
            } catch {
                throw WireFormatError(
                    error.code, offset: error.offset, message: "element \(list.count): \(error.message)")
            }
        } while try scanner.nextElement()
        return list
    }

    // MARK: - Scalars

    /// Reads an integer: a JSON number without fraction or exponent, or a
    /// string holding one (CloudKit's `numbersAsStrings`).
    private mutating func readInt64() throws(WireFormatError) -> Int64 {
        switch try scanner.peek("an integer") {
        case JSONText.quote:
            let span = try scanner.scanString()
            guard let value = scanner.withContents(of: span, JSONScanner.int64) else {
                throw scanner.error(.invalidValue, at: span.quote, "expected an integer in the string")
            }
            return value
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            if let value = scanner.scanInt64() { return value }
            let start = scanner.position
            let number = try scanner.scanNumber()
            guard number.isInteger else {
                throw scanner.error(.invalidValue, at: start, "expected an integer, found \(scanner.text(number))")
            }
            guard let value = scanner.int64(number) else {
                throw scanner.error(
                    .invalidValue, at: start, "integer \(scanner.text(number)) is out of the range of Int64")
            }
            return value
        default:
            throw scanner.unexpected("an integer")
        }
    }

    /// Reads milliseconds since 1970: an integer as ``readInt64()`` reads it,
    /// or a number with a fraction or exponent (a client's sub-millisecond
    /// `Date`), or a string holding one. Fractions round to the nearest,
    /// halves away from zero, as ``Milliseconds/exact(_:)`` rounds a date for
    /// the writer: flooring would turn a date's …123.99999 into 123.
    private mutating func readMilliseconds() throws(WireFormatError) -> Int64 {
        switch try scanner.peek("a number of milliseconds") {
        case JSONText.quote:
            let span = try scanner.scanString()
            let (isNumber, value) = scanner.withContents(of: span) { text -> (Bool, Int64?) in
                if let integer = JSONScanner.int64(text) { return (true, integer) }
                // Only a JSON number, with nothing around it, is rounded.
                var inner = JSONScanner(UnsafeRawBufferPointer(text))
                guard !text.isEmpty, (try? inner.scanNumber()) != nil, inner.isAtEnd else { return (false, nil) }
                return (true, JSONScanner.roundedInt64(text))
            }
            guard isNumber else {
                throw scanner.error(.invalidValue, at: span.quote, "expected a number of milliseconds in the string")
            }
            guard let value else {
                throw scanner.error(.invalidValue, at: span.quote, "milliseconds out of the range of Int64")
            }
            return value
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            if let value = scanner.scanInt64() { return value }
            let start = scanner.position
            let number = try scanner.scanNumber()
            let text = UnsafeBufferPointer(rebasing: scanner.bytes[number.start..<number.end])
            guard let value = number.isInteger ? JSONScanner.int64(text) : JSONScanner.roundedInt64(text) else {
                throw scanner.error(
                    .invalidValue, at: start, "milliseconds \(scanner.text(number)) out of the range of Int64")
            }
            return value
        default:
            throw scanner.unexpected("a number of milliseconds")
        }
    }

    private mutating func readDouble() throws(WireFormatError) -> Double {
        switch try scanner.peek("a number") {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = scanner.position
            let number = try scanner.scanNumber()
            let value = scanner.double(number)
            guard value.isFinite else {
                throw scanner.error(
                    .invalidValue, at: start, "number \(scanner.text(number)) is out of the range of Double")
            }
            return value
        default:
            throw scanner.unexpected("a number")
        }
    }

    private mutating func readBytes() throws(WireFormatError) -> Data {
        guard try scanner.peek("a base64 string") == JSONText.quote else {
            throw scanner.unexpected("a base64 string")
        }
        let span = try scanner.scanString()
        guard let data = scanner.withContents(of: span, Base64.decodeData) else {
            throw scanner.error(.invalidValue, at: span.quote, "invalid base64")
        }
        return data
    }

    mutating func readOptionalString() throws(WireFormatError) -> String? {
        try scanner.skipNull() ? nil : scanner.readString()
    }

    private mutating func readOptionalDouble() throws(WireFormatError) -> Double? {
        try scanner.skipNull() ? nil : readDouble()
    }

    private mutating func readOptionalInt64() throws(WireFormatError) -> Int64? {
        try scanner.skipNull() ? nil : readInt64()
    }

    // MARK: - Objects

    /// Reads `{"timestamp": …, "userRecordName": …, "deviceID": …}`.
    private mutating func readStamp(depth: Int) throws(WireFormatError) -> RecordStamp {
        _ = try scanner.peek("a stamp object")
        let start = scanner.position
        var timestamp: Int64?
        var user: String?
        var device: String?
        if try scanner.enterObject("a stamp object") {
            repeat {
                let key = try nextKey { scanner in
                    if scanner.consume(#""timestamp":"#) { return .timestamp }
                    if scanner.consume(#""userRecordName":"#) { return .userRecordName }
                    if scanner.consume(#""deviceID":"#) { return .deviceID }
                    return nil
                }
                switch key {
                case .timestamp:
                    timestamp = try context("timestamp") { (r) throws(WireFormatError) in try r.readInt64() }
                case .userRecordName:
                    user = try context("userRecordName") { (r) throws(WireFormatError) in
                        try r.readOptionalRepeatedName()
                    }
                case .deviceID:
                    device = try context("deviceID") { (r) throws(WireFormatError) in try r.readOptionalRepeatedName() }
                default: try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        guard let timestamp else { throw scanner.error(.missingKey, at: start, "stamp has no 'timestamp'") }
        return RecordStamp(timestamp: timestamp, userRecordName: user, deviceID: device)
    }

    /// Reads `{"zoneName": …, "ownerRecordName": …}`.
    mutating func readZoneID(depth: Int) throws(WireFormatError) -> ZoneID {
        _ = try scanner.peek("a zone ID object")
        let start = scanner.position
        var name: String?
        var owner: String?
        if try scanner.enterObject("a zone ID object") {
            repeat {
                let key = try nextKey { scanner in
                    if scanner.consume(#""zoneName":"#) { return .zoneName }
                    if scanner.consume(#""ownerRecordName":"#) { return .ownerRecordName }
                    return nil
                }
                switch key {
                case .zoneName:
                    name = try context("zoneName") { (r) throws(WireFormatError) in try r.readRepeatedName() }
                case .ownerRecordName:
                    owner = try context("ownerRecordName") { (r) throws(WireFormatError) in
                        try r.readOptionalRepeatedName()
                    }
                default: try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        guard let name else { throw scanner.error(.missingKey, at: start, "zone ID has no 'zoneName'") }
        return ZoneID(zoneName: name, ownerRecordName: owner)
    }

    /// Reads `{"recordName": …, "zoneID": …, "action": …}`; a missing action is `NONE`.
    mutating func readReference(depth: Int) throws(WireFormatError) -> Reference {
        _ = try scanner.peek("a reference object")
        let start = scanner.position
        var name: String?
        var zone: ZoneID?
        var action = Reference.Action.none
        if try scanner.enterObject("a reference object") {
            repeat {
                let key = try nextKey { scanner in
                    if scanner.consume(#""recordName":"#) { return .recordName }
                    if scanner.consume(#""zoneID":"#) { return .zoneID }
                    if scanner.consume(#""action":"#) { return .action }
                    return nil
                }
                switch key {
                case .recordName:
                    name = try context("recordName") { (r) throws(WireFormatError) in try r.scanner.readString() }
                case .zoneID:
                    zone = try context("zoneID") { (r) throws(WireFormatError) in
                        try r.scanner.skipNull() ? nil : r.readZoneID(depth: depth + 1)
                    }
                case .action:
                    action = try readAction()
                default: try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        guard let name else { throw scanner.error(.missingKey, at: start, "reference has no 'recordName'") }
        return Reference(recordName: name, zoneID: zone, action: action)
    }

    private mutating func readAction() throws(WireFormatError) -> Reference.Action {
        guard try scanner.peek("a reference action") == JSONText.quote else {
            throw scanner.unexpected("a reference action")
        }
        let span = try scanner.scanString()
        if let action = scanner.withContents(of: span, WireKey.action) { return action }
        let text = try scanner.string(span)
        throw scanner.error(
            .invalidValue, at: span.quote, "unknown reference action '\(text)' (NONE, DELETE_SELF or VALIDATE)")
    }

    /// Reads an asset dictionary; every key is optional.
    private mutating func readAsset(depth: Int) throws(WireFormatError) -> Asset {
        var asset = Asset()
        guard try scanner.enterObject("an asset object") else { return asset }
        repeat {
            let key = try nextKey { scanner in
                if scanner.consume(#""fileChecksum":"#) { return .fileChecksum }
                if scanner.consume(#""size":"#) { return .size }
                if scanner.consume(#""referenceChecksum":"#) { return .referenceChecksum }
                if scanner.consume(#""wrappingKey":"#) { return .wrappingKey }
                if scanner.consume(#""receipt":"#) { return .receipt }
                if scanner.consume(#""downloadURL":"#) { return .downloadURL }
                return nil
            }
            switch key {
            case .fileChecksum:
                asset.fileChecksum = try context("fileChecksum") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            case .size:
                asset.size = try context("size") { (r) throws(WireFormatError) in try r.readOptionalInt64() }
            case .referenceChecksum:
                asset.referenceChecksum = try context("referenceChecksum") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            case .wrappingKey:
                asset.wrappingKey = try context("wrappingKey") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            case .receipt:
                asset.receipt = try context("receipt") { (r) throws(WireFormatError) in try r.readOptionalString() }
            case .downloadURL:
                asset.downloadURL = try context("downloadURL") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            default:
                try scanner.skipValue(depth: depth + 1)
            }
        } while try scanner.nextMember()
        return asset
    }

    /// Reads a location dictionary; `latitude` and `longitude` are required.
    private mutating func readLocation(depth: Int) throws(WireFormatError) -> Location {
        _ = try scanner.peek("a location object")
        let start = scanner.position
        var latitude: Double?
        var longitude: Double?
        var location = Location(latitude: 0, longitude: 0)
        if try scanner.enterObject("a location object") {
            repeat {
                let key = try nextKey { scanner in
                    if scanner.consume(#""latitude":"#) { return .latitude }
                    if scanner.consume(#""longitude":"#) { return .longitude }
                    if scanner.consume(#""horizontalAccuracy":"#) { return .horizontalAccuracy }
                    if scanner.consume(#""verticalAccuracy":"#) { return .verticalAccuracy }
                    if scanner.consume(#""altitude":"#) { return .altitude }
                    if scanner.consume(#""speed":"#) { return .speed }
                    if scanner.consume(#""course":"#) { return .course }
                    if scanner.consume(#""timestamp":"#) { return .timestamp }
                    return nil
                }
                switch key {
                case .latitude:
                    latitude = try context("latitude") { (r) throws(WireFormatError) in try r.readDouble() }
                case .longitude:
                    longitude = try context("longitude") { (r) throws(WireFormatError) in try r.readDouble() }
                case .horizontalAccuracy:
                    location.horizontalAccuracy = try context("horizontalAccuracy") { (r) throws(WireFormatError) in
                        try r.readOptionalDouble()
                    }
                case .verticalAccuracy:
                    location.verticalAccuracy = try context("verticalAccuracy") { (r) throws(WireFormatError) in
                        try r.readOptionalDouble()
                    }
                case .altitude:
                    location.altitude = try context("altitude") { (r) throws(WireFormatError) in
                        try r.readOptionalDouble()
                    }
                case .speed:
                    location.speed = try context("speed") { (r) throws(WireFormatError) in try r.readOptionalDouble() }
                case .course:
                    location.course = try context("course") { (r) throws(WireFormatError) in try r.readOptionalDouble()
                    }
                case .timestamp:
                    location.timestamp = try context("timestamp") { (r) throws(WireFormatError) in
                        try r.scanner.skipNull() ? nil : r.readMilliseconds()
                    }
                default:
                    try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        guard let latitude else { throw scanner.error(.missingKey, at: start, "location has no 'latitude'") }
        guard let longitude else { throw scanner.error(.missingKey, at: start, "location has no 'longitude'") }
        location.latitude = latitude
        location.longitude = longitude
        return location
    }
}

/// The last few long names a reader made, handed out again when the same
/// bytes come back: a page of records by one user on one device then holds
/// one copy of each name instead of one per record. Short names are kept
/// inline by `String` and never cached.
private struct RepeatedNames {
    private var names: [String] = []
    private var next = 0

    static var capacity: Int { 4 }

    mutating func string(_ utf8: UnsafeBufferPointer<UInt8>) -> String {
        guard utf8.count > 15 else { return JSONScanner.makeString(utf8) }
        for name in names where name.utf8.count == utf8.count {
            // Byte equality: names are identities, never compared as Unicode text.
            if name.utf8.withContiguousStorageIfAvailable({ $0.elementsEqual(utf8) }) == true { return name }
        }
        let made = JSONScanner.makeString(utf8)
        if names.count < Self.capacity {
            names.append(made)
        } else {
            names[next] = made
            next = (next + 1) % Self.capacity
        }
        return made
    }
}
