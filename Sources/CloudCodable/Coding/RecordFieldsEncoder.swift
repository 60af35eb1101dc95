import Foundation

/// The `Encoder` for the top level of a record: every key becomes a field.
///
/// The fields are written straight into their wire text (see
/// ``WireFields``) as the model encodes them, so that they never exist as
/// `String`s and ``FieldValue``s on the way to the wire. What the text
/// cannot take (a name written twice or removed, a name that needs escapes,
/// a value the wire form refuses) turns the fields written so far into
/// ordinary entries, and the rest of the record is encoded into those.
///
/// Calls that `Encoder` cannot let throw (asking for an unkeyed container at
/// the top, say) record an error that ``finish(_:)`` throws, so that no
/// shape of `encode(to:)` can trap.
///
/// Threads reuse their encoder from one record to the next, with its
/// buffers; everything that belongs to a record is let go when it is done.
final class RecordFieldsEncoder: Encoder {
    // Only this encoder's containers touch these, one call at a time;
    // dynamic exclusivity checks would cost more than the writes.

    /// Whether the fields are still being written as wire text.
    @exclusivity(unchecked) private var isWritingText = true
    /// The wire text of the fields so far (from `{`), and where each is.
    @exclusivity(unchecked) private var text = JSONWriter(capacity: 512)
    @exclusivity(unchecked) private var slots: [WireFields.Slot] = []
    /// The fields, once they are no longer wire text.
    @exclusivity(unchecked) private var fields = RecordFields()
    /// Fields whose value a nested container or super-encoder is still
    /// writing; resolved in ``finish(_:)``.
    @exclusivity(unchecked) private var pending: [(key: String, node: EncodedNode)] = []
    @exclusivity(unchecked) private var deferredError: (any Error)?
    /// Whether a record is being encoded. Containers ignore writes while
    /// it is `false`: a container kept past the end of its `encode(to:)`
    /// holds the encoder, which is then never reused (see
    /// ``ThreadLocalCache/give(_:)``), and finds it done.
    @exclusivity(unchecked) private(set) var isActive = false
    /// A summary of the names set so far (see `RecordFields.set(_:forKey:seen:)`).
    @exclusivity(unchecked) private var seen = FieldNameSummary()

    let codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init() {
        slots.reserveCapacity(16)
    }

    /// Encoders that threads reuse between records.
    private static let cache = ThreadLocalCache<RecordFieldsEncoder>()

    /// Encodes `value` as record fields with this thread's encoder (or a new
    /// one when it is busy further up the stack).
    static func encode<Value: Encodable>(_ value: Value) throws -> RecordFields {
        var encoder = cache.take() ?? RecordFieldsEncoder()
        encoder.begin()
        defer {
            encoder.end()
            cache.give(&encoder)
        }
        try value.encode(to: encoder)
        return try encoder.finish(value)
    }

    private func begin() {
        isActive = true
        seen = FieldNameSummary()
        isWritingText = true
        text.removeAll()
        text.put(UInt8(ascii: "{"))
        slots.removeAll(keepingCapacity: true)
    }

    /// Lets go of everything that belongs to the record just encoded, and
    /// of buffers that grew far beyond the usual.
    private func end() {
        isActive = false
        fields = RecordFields()
        pending.removeAll()
        deferredError = nil
        if text.capacity > 1 << 16 { text = JSONWriter(capacity: 512) }
        if slots.capacity > 256 { slots = [] }
        // Nor is one that a model kept, or one that grew too large.
        if streamStorage != nil, !isKnownUniquelyReferenced(&streamStorage!) || !streamStorage!.isWorthKeeping {
            streamStorage = nil
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        fail("a record's top level must be a keyed container, not an unkeyed one")
        return TreeUnkeyedEncodingContainer(array: ArrayNode(), path: CodingPath())
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        RecordSingleValueEncodingContainer(encoder: self)
    }

    func fail(_ description: String) {
        if deferredError == nil {
            deferredError = EncodingError.invalidValue(
                (), .init(codingPath: [], debugDescription: description))
        }
    }

    @exclusivity(unchecked) private var streamStorage: StreamEncoder?

    /// Reused for every nested value, across records.
    private var stream: StreamEncoder {
        if let streamStorage { return streamStorage }
        let stream = StreamEncoder()
        streamStorage = stream
        return stream
    }

    /// Sets the field for a value of a type without a direct mapping:
    /// streamed to JSON when its root is keyed (and then written as base64
    /// straight from the stream's buffer), captured as a tree otherwise.
    func setNested<T: Encodable>(_ value: T, key: some CodingKey) throws {
        let name = key.stringValue
        let stream = stream
        switch try stream.encodeRoot(value, path: CodingPath(key)) {
        case .json:
            if isWritingText {
                let written = writeField(name, type: .bytes) { text in
                    stream.writer.withUnsafeBytes { text.putBase64($0) }
                    return (0, true)
                }
                if written { return }
            }
            set(name, .bytes(stream.writer.withUnsafeBytes { Data($0) }))
        case .scalar(let node):
            if case .array(let array) = node, array.items.isEmpty, T.self is any ReferenceListEncodable.Type {
                set(name, .referenceList([]))
                return
            }
            set(name, try node.fieldValue(codingPath: [key]))
        case .fallback:
            let node = try TreeEncoder.node(for: value, path: CodingPath(key))
            set(name, try node.fieldValue(codingPath: [key]))
        }
    }

    // MARK: Writing fields

    /// Sets the field named `key`.
    @inline(__always)
    func set(_ key: String, _ value: FieldValue) {
        if !pending.isEmpty { pending.removeAll { $0.key == key } }
        if isWritingText {
            let written = writeField(key, type: value.type) { (text) throws(WireFormatError) in
                let start = text.count
                try text.writeValueText(value)
                return (Self.scalar(of: value), Self.isPlain(value, written: text.count &- start))
            }
            if written { return }
            stopWritingText()
        }
        fields.set(value, forKey: key, seen: &seen)
    }

    /// Sets the field named `key` to the text of a `UUID`, without making a `String`.
    @inline(__always)
    func set(_ key: String, uuid: UUID) {
        if pending.isEmpty, isWritingText {
            let written = writeField(key, type: .string) { text in
                let target = text.reserveUnique(UUIDFormatting.length &+ 2)
                target.pointee = JSONText.quote
                UUIDFormatting.write(uuid, to: target + 1)
                target[UUIDFormatting.length &+ 1] = JSONText.quote
                text.length &+= UUIDFormatting.length &+ 2
                return (0, true)
            }
            if written { return }
        }
        set(key, .string(UUIDFormatting.string(uuid)))
    }

    /// Sets (or, for `nil`, removes) the field named `key`.
    func set(_ key: String, _ value: FieldValue?) {
        if let value {
            set(key, value)
        } else {
            if !pending.isEmpty { pending.removeAll { $0.key == key } }
            remove(key)
        }
    }

    private func remove(_ key: String) {
        if isWritingText {
            guard seen.contains(FieldNameSummary.bit(of: key)), slotPosition(of: key) != nil else { return }
            stopWritingText()
        }
        fields.removeValue(forKey: key)
    }

    func setPending(_ key: String, _ node: EncodedNode) {
        pending.removeAll { $0.key == key }
        remove(key)
        pending.append((key, node))
    }

    /// Writes `"key":{"type":"T","value":…}` into the text, `body` writing
    /// the value and returning its scalar bits and whether it is plain (see
    /// ``WireFields/Slot``). Returns `false`, with nothing written, when the
    /// field cannot be wire text: its name is already set or needs escapes,
    /// the text is too large to describe, or `body` throws.
    @inline(__always)
    private func writeField(
        _ key: String, type: FieldType,
        _ body: (inout JSONWriter) throws(WireFormatError) -> (scalar: UInt64, isPlain: Bool)
    ) -> Bool {
        var name = key
        return name.withUTF8 { name -> Bool in
            let count = name.count
            let bit = FieldNameSummary.bit(of: name)
            if seen.contains(bit), slotPosition(of: name) != nil { return false }
            guard JSONText.firstEscapeIndex(name) == count, text.count < WireFields.maximumTextCount / 2 else {
                return false
            }
            let mark = text.length
            if !slots.isEmpty { text.put(UInt8(ascii: ",")) }
            text.put(JSONText.quote)
            let nameStart = text.length
            text.put(name)
            text.put(JSONText.quote)
            text.put(WireText.fieldPrefix(type))
            let valueStart = text.length
            let written: (scalar: UInt64, isPlain: Bool)
            do {
                written = try body(&text)
            } catch {
                text.length = mark
                return false
            }
            let valueEnd = text.length
            // Offsets are 32 bits: a value that takes the text past what a
            // table can describe makes the fields entries instead.
            guard valueEnd < WireFields.maximumTextCount - 1 else {
                text.length = mark
                return false
            }
            text.put(UInt8(ascii: "}"))
            seen.insert(bit)
            slots.append(
                WireFields.Slot(
                    nameStart: Int32(truncatingIfNeeded: nameStart), nameCount: Int32(truncatingIfNeeded: count),
                    valueStart: Int32(truncatingIfNeeded: valueStart), valueEnd: Int32(truncatingIfNeeded: valueEnd),
                    scalar: written.scalar, type: type, isCanonical: written.isPlain))
            return true
        }
    }

    /// The slot whose name is `name`.
    private func slotPosition(of name: UnsafeBufferPointer<UInt8>) -> Int? {
        text.withUnsafeBytes { raw in
            let text = raw.assumingMemoryBound(to: UInt8.self)
            for i in slots.indices where Int(slots[i].nameCount) == name.count {
                let start = Int(slots[i].nameStart)
                if name.isEmpty || JSONScanner.equal(text.baseAddress! + start, name.baseAddress!, count: name.count) {
                    return i
                }
            }
            return nil
        }
    }

    private func slotPosition(of name: String) -> Int? {
        var name = name
        return name.withUTF8 { slotPosition(of: $0) }
    }

    /// Turns the fields written so far into entries and goes on with those.
    private func stopWritingText() {
        guard isWritingText else { return }
        isWritingText = false
        fields = text.withUnsafeBytes { text in
            var fields = RecordFields(
                wire: slots.withUnsafeBufferPointer { WireFields.make(slots: $0, text: text, isCanonical: false) })
            fields.materialize()
            return fields
        }
    }

    /// The scalar bits a slot keeps for `value`.
    @inline(__always)
    private static func scalar(of value: FieldValue) -> UInt64 {
        switch value {
        case .int64(let v): return UInt64(bitPattern: v)
        case .double(let v): return v.bitPattern
        case .timestamp(let date): return UInt64(bitPattern: Milliseconds.exact(date) ?? 0)
        default: return 0
        }
    }

    /// Whether a value whose text took `written` bytes was written without
    /// escapes (so that a string's text between the quotes is the string).
    @inline(__always)
    private static func isPlain(_ value: FieldValue, written: Int) -> Bool {
        guard case .string(let string) = value else { return true }
        return written == string.utf8.count &+ 2
    }

    /// The record's fields, once `encode(to:)` has returned.
    func finish<Value>(_ value: Value) throws -> RecordFields {
        if let deferredError { throw deferredError }
        for (key, node) in pending {
            set(key, try node.fieldValue(codingPath: [AnyCodingKey(key)]))
        }
        pending.removeAll()
        guard isWritingText else { return fields }
        text.put(UInt8(ascii: "}"))
        return text.withUnsafeBytes { text in
            RecordFields(
                wire: slots.withUnsafeBufferPointer { WireFields.make(slots: $0, text: text, isCanonical: true) })
        }
    }
}

struct RecordKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RecordFieldsEncoder
    var codingPath: [any CodingKey] { [] }

    /// Sets (or, for `nil`, removes) the field, unless the record is done.
    @inline(__always)
    private func set(_ key: Key, _ value: FieldValue) {
        guard encoder.isActive else { return }
        encoder.set(key.stringValue, value)
    }

    @inline(__always)
    private func set(_ key: Key, _ value: FieldValue?) {
        guard encoder.isActive else { return }
        encoder.set(key.stringValue, value)
    }

    mutating func encodeNil(forKey key: Key) throws { set(key, nil) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        set(key, .int64(value ? 1 : 0))
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        set(key, .string(value))
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(key, .double(try FieldConversion.finite(value, codingPath: [key])))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(key, .double(try FieldConversion.finite(Double(value), codingPath: [key])))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(key, .int64(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        set(key, .int64(try FieldConversion.int64(value, codingPath: [key])))
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(key, .int64(Int64(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        set(key, .int64(try FieldConversion.int64(value, codingPath: [key])))
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        // The model's metadata travels in Record.metadata, never as a field.
        if T.self == RecordMetadata.self || !encoder.isActive { return }
        if T.self == UUID.self {
            encoder.set(key.stringValue, uuid: FieldConversion.cast(value))
            return
        }
        if let field = try FieldConversion.knownField(value, codingPath: [key]) {
            set(key, field)
            return
        }
        try encoder.setNested(value, key: key)
    }

    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        // The model's metadata is not a field: skip it without copying it.
        if T.self == RecordMetadata.self { return }
        guard let value else { return }
        try encode(value, forKey: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let object = ObjectNode()
        if encoder.isActive { encoder.setPending(key.stringValue, .object(object)) }
        return KeyedEncodingContainer(
            TreeKeyedEncodingContainer<NestedKey>(object: object, path: CodingPath(key)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let array = ArrayNode()
        if encoder.isActive { encoder.setPending(key.stringValue, .array(array)) }
        return TreeUnkeyedEncodingContainer(array: array, path: CodingPath(key))
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: AnyCodingKey("super")) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(forKey: AnyCodingKey(key.stringValue))
    }

    private func superEncoder(forKey key: AnyCodingKey) -> any Encoder {
        let superEncoder = TreeEncoder(path: CodingPath(key))
        if encoder.isActive { encoder.setPending(key.stringValue, .slot(superEncoder)) }
        return superEncoder
    }
}

/// A single-value container at the top level: a wrapper type may forward to
/// a keyed value (which then becomes the record's fields); a bare scalar has
/// no field name and is refused.
struct RecordSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: RecordFieldsEncoder
    var codingPath: [any CodingKey] { [] }

    private func refuse() throws {
        throw EncodingError.invalidValue(
            (),
            .init(
                codingPath: [],
                debugDescription: "a record's top level must be a keyed container, not a single value"))
    }

    mutating func encodeNil() throws { try refuse() }
    mutating func encode(_ value: Bool) throws { try refuse() }
    mutating func encode(_ value: String) throws { try refuse() }
    mutating func encode(_ value: Double) throws { try refuse() }
    mutating func encode(_ value: Float) throws { try refuse() }
    mutating func encode(_ value: Int) throws { try refuse() }
    mutating func encode(_ value: Int8) throws { try refuse() }
    mutating func encode(_ value: Int16) throws { try refuse() }
    mutating func encode(_ value: Int32) throws { try refuse() }
    mutating func encode(_ value: Int64) throws { try refuse() }
    mutating func encode(_ value: UInt) throws { try refuse() }
    mutating func encode(_ value: UInt8) throws { try refuse() }
    mutating func encode(_ value: UInt16) throws { try refuse() }
    mutating func encode(_ value: UInt32) throws { try refuse() }
    mutating func encode(_ value: UInt64) throws { try refuse() }
    mutating func encode<T: Encodable>(_ value: T) throws {
        if try FieldConversion.knownField(value, codingPath: []) != nil { try refuse() }
        try value.encode(to: encoder)
    }
}

/// A coding key made at run time: for paths in errors and synthesized keys.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(_ string: String) {
        stringValue = string
        intValue = nil
    }
    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
