/// The fields of a ``Record``: a dictionary from field name to value.
///
/// `RecordFields` reads and writes like `[String: FieldValue]` (it is built
/// from a dictionary literal, subscripted by name, and iterated as
/// `(key, value)` pairs) but keeps its entries in one array in the order
/// they were first set. Records have a handful to a few dozen fields, and
/// field names are short: comparing them one by one is several times
/// cheaper than hashing them, and encoding, decoding and the wire form all
/// touch every field. Past 32 fields a hash index keeps lookups constant-time.
///
/// The fields of a record that ``WireFormat`` read, or that
/// ``RecordEncoder`` made, start out as their wire text instead: a model
/// then goes to the wire, or comes from it, without every field becoming a
/// `String` and a ``FieldValue`` on the way. Reading such a field parses
/// its value from the text (each time it is read); the first change turns
/// all of them into ordinary entries. Either way the fields behave the same.
///
/// Equality and hashing ignore order, as for a dictionary.
public struct RecordFields: Sendable {
    /// One field: its name and value, stored together so that a record's
    /// fields take one allocation.
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var name: String
        @usableFromInline var value: FieldValue

        @inlinable
        init(name: String, value: FieldValue) {
            self.name = name
            self.value = value
        }
    }

    /// The fields, unless they are still wire text (then empty).
    @usableFromInline var entries: [Entry]
    /// Positions by name, kept once there are more than ``indexThreshold`` fields.
    @usableFromInline var index: [FieldNameKey: Int]?
    /// The fields as wire text, until they are first changed.
    @usableFromInline var wire: WireFields?

    @usableFromInline static var indexThreshold: Int { 32 }

    /// Creates empty fields.
    @inlinable
    public init() {
        entries = []
        index = nil
        wire = nil
    }

    /// Creates empty fields with room for `minimumCapacity` entries.
    @inlinable
    public init(minimumCapacity: Int) {
        self.init()
        entries.reserveCapacity(minimumCapacity)
    }

    /// Creates fields from a dictionary.
    public init(_ dictionary: [String: FieldValue]) {
        self.init(minimumCapacity: dictionary.count)
        for (key, value) in dictionary {
            entries.append(Entry(name: key, value: value))
        }
        rebuildIndexIfNeeded()
    }

    /// Fields held as their wire text.
    init(wire: WireFields) {
        self.init()
        self.wire = wire
    }

    /// The fields as a dictionary.
    public var dictionary: [String: FieldValue] {
        var result = [String: FieldValue](minimumCapacity: count)
        for (name, value) in self { result[name] = value }
        return result
    }

    /// The field names, in the order they were first set.
    public var keys: [String] {
        if let wire { return (0..<wire.count).map(wire.name(at:)) }
        return entries.map(\.name)
    }

    /// The field values, in the order of ``keys``.
    public var values: [FieldValue] {
        if let wire { return (0..<wire.count).map(wire.value(at:)) }
        return entries.map(\.value)
    }

    /// The position of the field named `key`. Names are compared by length
    /// first, which rules out most of them without looking at their bytes.
    @usableFromInline
    func position(of key: String) -> Int? {
        if let wire { return wire.position(of: key) }
        if let index { return index[FieldNameKey(key)] }
        let length = key.utf8.count
        return entries.withUnsafeBufferPointer { entries in
            var i = 0
            let count = entries.count
            while i < count {
                let name = entries[i].name
                if name.utf8.count == length && name.utf8.elementsEqual(key.utf8) { return i }
                i &+= 1
            }
            return nil
        }
    }

    /// The position of the field named `key`, trying `hint` first: readers
    /// that ask for fields in the order they were written find each one at
    /// the first comparison.
    @inline(__always)
    func position(of key: String, hint: Int) -> Int? {
        if let wire { return wire.position(of: key, hint: hint) }
        if index == nil, hint < entries.count {
            let name = entries[hint].name
            if name.utf8.count == key.utf8.count && name.utf8.elementsEqual(key.utf8) { return hint }
        }
        return position(of: key)
    }

    /// The value of the field at `position`.
    @inline(__always)
    func value(at position: Int) -> FieldValue {
        if let wire { return wire.value(at: position) }
        return entries[position].value
    }

    /// Turns wire text into entries, before a change.
    @inline(__always)
    @usableFromInline
    mutating func materialize() {
        guard let wire else { return }
        entries = wire.entries()
        self.wire = nil
        rebuildIndexIfNeeded()
    }

    /// The value of the field named `key`; setting `nil` removes the field.
    public subscript(key: String) -> FieldValue? {
        get { position(of: key).map(value(at:)) }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Sets the field named `key`, returning the value it replaced.
    @discardableResult
    public mutating func updateValue(_ value: FieldValue, forKey key: String) -> FieldValue? {
        materialize()
        if let i = position(of: key) {
            let old = entries[i].value
            entries[i].value = value
            return old
        }
        appendUnchecked(value, forKey: key)
        return nil
    }

    /// Appends a field known not to be present yet. Internal fast path for
    /// readers that check uniqueness themselves.
    @inline(__always)
    mutating func appendUnchecked(_ value: FieldValue, forKey key: String) {
        materialize()
        entries.append(Entry(name: key, value: value))
        if index != nil || entries.count > Self.indexThreshold { indexLast() }
    }

    mutating func indexLast() {
        if index != nil {
            index![FieldNameKey(entries[entries.count - 1].name)] = entries.count - 1
        } else {
            rebuildIndexIfNeeded()
        }
    }

    /// Sets the field named `key`, tracking in `seen` a summary of the names
    /// set so far (see ``FieldNameSummary``): a name whose bit is clear
    /// cannot be present, and is appended without comparing it with the
    /// others. Writers and readers that fill fields one by one use this;
    /// `seen` starts empty.
    @inline(__always)
    mutating func set(_ value: FieldValue, forKey key: String, seen: inout FieldNameSummary) {
        let bit = FieldNameSummary.bit(of: key)
        if !seen.contains(bit) {
            seen.insert(bit)
            appendUnchecked(value, forKey: key)
        } else {
            updateValue(value, forKey: key)
        }
    }

    /// Removes the field named `key`, returning its value.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> FieldValue? {
        guard position(of: key) != nil else { return nil }
        materialize()
        guard let i = position(of: key) else { return nil }
        let old = entries.remove(at: i).value
        if index != nil { rebuildIndexIfNeeded() }
        return old
    }

    /// Removes every field.
    public mutating func removeAll() {
        entries.removeAll()
        index = nil
        wire = nil
    }

    @usableFromInline
    mutating func rebuildIndexIfNeeded() {
        guard entries.count > Self.indexThreshold else {
            index = nil
            return
        }
        var built = [FieldNameKey: Int](minimumCapacity: entries.count)
        for (i, entry) in entries.enumerated() { built[FieldNameKey(entry.name)] = i }
        index = built
    }

    /// Fields with the same names whose values are transformed.
    public func mapValues(_ transform: (FieldValue) throws -> FieldValue) rethrows -> RecordFields {
        var result = self
        result.materialize()
        for i in result.entries.indices { result.entries[i].value = try transform(result.entries[i].value) }
        return result
    }
}

extension RecordFields: RandomAccessCollection {
    /// A field: its name and value.
    public typealias Element = (key: String, value: FieldValue)

    /// The position of the first field.
    public var startIndex: Int { 0 }
    /// The position after the last field.
    public var endIndex: Int { wire?.count ?? entries.count }
    /// The field at `position`.
    public subscript(position: Int) -> Element {
        if let wire { return (wire.name(at: position), wire.value(at: position)) }
        return (entries[position].name, entries[position].value)
    }

    /// The type of the field at `position`, known without reading its
    /// value from the wire: a rule that looks at one type of field (the
    /// references, say) skips the others at no cost.
    package func type(at position: Int) -> FieldType {
        if let wire { return wire.slot(position).type }
        return entries[position].value.type
    }

    /// Whether the field at `position` is a list with no items, known
    /// without reading its value from the wire.
    package func isEmptyList(at position: Int) -> Bool {
        if let wire {
            // Wire fields are kept in the writer's compact form: an empty list is `[]`.
            let slot = wire.slot(position)
            return slot.type.isList && slot.valueEnd - slot.valueStart == 2
        }
        return entries[position].value.listCount == 0
    }

    /// The name of the field at `position`, without reading its value.
    package func name(at position: Int) -> String {
        if let wire { return wire.name(at: position) }
        return entries[position].name
    }
}

extension RecordFields: ExpressibleByDictionaryLiteral {
    /// Creates fields from a literal such as `["title": .string("Hi")]`.
    /// A name given twice keeps its last value.
    public init(dictionaryLiteral elements: (String, FieldValue)...) {
        self.init(minimumCapacity: elements.count)
        for (key, value) in elements { updateValue(value, forKey: key) }
    }
}

extension RecordFields: Equatable {
    /// Whether both hold the same names with the same values, in any order.
    public static func == (lhs: RecordFields, rhs: RecordFields) -> Bool {
        if let left = lhs.wire, let right = rhs.wire, left.storage === right.storage { return true }
        let count = lhs.count
        guard count == rhs.count else { return false }
        // Usually both hold the same names in the same order.
        let leftNames = lhs.keys
        let rightNames = rhs.keys
        if leftNames == rightNames {
            for i in 0..<count where lhs.value(at: i) != rhs.value(at: i) { return false }
            return true
        }
        for i in 0..<count {
            guard rhs[leftNames[i]] == lhs.value(at: i) else { return false }
        }
        return true
    }
}

extension RecordFields: Hashable {
    /// Hashes the fields independently of their order.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for (name, value) in self {
            var one = Hasher()
            one.combine(name)
            one.combine(value)
            combined = combined &+ one.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}

extension RecordFields: CustomStringConvertible {
    /// The fields as a dictionary literal.
    public var description: String {
        guard !isEmpty else { return "[:]" }
        return "[" + map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "]"
    }
}

/// A field name as a key of the index: its exact bytes. `String`'s own
/// equality treats canonically equivalent names as one, which would merge
/// two fields a record keeps apart.
@usableFromInline
struct FieldNameKey: Hashable, Sendable {
    @usableFromInline let name: String

    @usableFromInline
    init(_ name: String) {
        self.name = name
    }

    @usableFromInline
    static func == (lhs: FieldNameKey, rhs: FieldNameKey) -> Bool {
        lhs.name.utf8.count == rhs.name.utf8.count && lhs.name.utf8.elementsEqual(rhs.name.utf8)
    }

    @usableFromInline
    func hash(into hasher: inout Hasher) {
        for byte in name.utf8 { hasher.combine(byte) }
    }
}
