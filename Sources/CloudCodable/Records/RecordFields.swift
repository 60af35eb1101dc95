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
/// Equality and hashing ignore order, as for a dictionary.
public struct RecordFields: Sendable {
    @usableFromInline var names: [String]
    @usableFromInline var items: [FieldValue]
    /// Positions by name, kept once there are more than ``indexThreshold`` fields.
    @usableFromInline var index: [String: Int]?

    @usableFromInline static var indexThreshold: Int { 32 }

    /// Creates empty fields.
    @inlinable
    public init() {
        names = []
        items = []
        index = nil
    }

    /// Creates empty fields with room for `minimumCapacity` entries.
    @inlinable
    public init(minimumCapacity: Int) {
        self.init()
        names.reserveCapacity(minimumCapacity)
        items.reserveCapacity(minimumCapacity)
    }

    /// Creates fields from a dictionary.
    public init(_ dictionary: [String: FieldValue]) {
        self.init(minimumCapacity: dictionary.count)
        for (key, value) in dictionary {
            names.append(key)
            items.append(value)
        }
        rebuildIndexIfNeeded()
    }

    /// The fields as a dictionary.
    public var dictionary: [String: FieldValue] {
        Dictionary(uniqueKeysWithValues: zip(names, items))
    }

    /// The field names, in the order they were first set.
    public var keys: [String] { names }

    /// The field values, in the order of ``keys``.
    public var values: [FieldValue] { items }

    /// The position of the field named `key`.
    @inlinable
    func position(of key: String) -> Int? {
        if let index { return index[key] }
        var i = 0
        let count = names.count
        while i < count {
            if names[i] == key { return i }
            i += 1
        }
        return nil
    }

    /// The value of the field named `key`; setting `nil` removes the field.
    @inlinable
    public subscript(key: String) -> FieldValue? {
        get { position(of: key).map { items[$0] } }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Sets the field named `key`, returning the value it replaced.
    @inlinable
    @discardableResult
    public mutating func updateValue(_ value: FieldValue, forKey key: String) -> FieldValue? {
        if let i = position(of: key) {
            let old = items[i]
            items[i] = value
            return old
        }
        appendUnchecked(value, forKey: key)
        return nil
    }

    /// Appends a field known not to be present yet. Internal fast path for
    /// readers that check uniqueness themselves.
    @usableFromInline
    mutating func appendUnchecked(_ value: FieldValue, forKey key: String) {
        names.append(key)
        items.append(value)
        if index != nil {
            index![key] = names.count - 1
        } else if names.count > Self.indexThreshold {
            rebuildIndexIfNeeded()
        }
    }

    /// Removes the field named `key`, returning its value.
    @inlinable
    @discardableResult
    public mutating func removeValue(forKey key: String) -> FieldValue? {
        guard let i = position(of: key) else { return nil }
        names.remove(at: i)
        let old = items.remove(at: i)
        if index != nil { rebuildIndexIfNeeded() }
        return old
    }

    /// Removes every field.
    public mutating func removeAll() {
        names.removeAll()
        items.removeAll()
        index = nil
    }

    @usableFromInline
    mutating func rebuildIndexIfNeeded() {
        guard names.count > Self.indexThreshold else {
            index = nil
            return
        }
        var built = [String: Int](minimumCapacity: names.count)
        for (i, name) in names.enumerated() { built[name] = i }
        index = built
    }

    /// Fields with the same names whose values are transformed.
    public func mapValues(_ transform: (FieldValue) throws -> FieldValue) rethrows -> RecordFields {
        var result = self
        result.items = try items.map(transform)
        return result
    }
}

extension RecordFields: RandomAccessCollection {
    /// A field: its name and value.
    public typealias Element = (key: String, value: FieldValue)

    /// The position of the first field.
    public var startIndex: Int { 0 }
    /// The position after the last field.
    public var endIndex: Int { names.count }
    /// The field at `position`.
    public subscript(position: Int) -> Element { (names[position], items[position]) }
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
        guard lhs.count == rhs.count else { return false }
        if lhs.names == rhs.names { return lhs.items == rhs.items }
        for i in lhs.names.indices {
            guard rhs[lhs.names[i]] == lhs.items[i] else { return false }
        }
        return true
    }
}

extension RecordFields: Hashable {
    /// Hashes the fields independently of their order.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        for i in names.indices {
            var entry = Hasher()
            entry.combine(names[i])
            entry.combine(items[i])
            combined = combined &+ entry.finalize()
        }
        hasher.combine(names.count)
        hasher.combine(combined)
    }
}

extension RecordFields: CustomStringConvertible {
    /// The fields as a dictionary literal.
    public var description: String {
        guard !isEmpty else { return "[:]" }
        return "[" + indices.map { "\"\(names[$0])\": \(items[$0])" }.joined(separator: ", ") + "]"
    }
}
