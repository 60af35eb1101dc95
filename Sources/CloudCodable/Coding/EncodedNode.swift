import Foundation

/// A value as the encoder captured it, before it is turned into a record
/// field or into JSON bytes.
///
/// Keyed and unkeyed containers are reference types because Codable lets a
/// caller keep a nested container and write to it after creating siblings.
enum EncodedNode {
    case null
    case bool(Bool)
    case int(Int64)
    /// An unsigned value above `Int64.max`.
    case uint(UInt64)
    case double(Double)
    case float(Float)
    case string(String)
    case date(Date)
    case data(Data)
    case decimal(Decimal)
    /// A ``CloudReference``: a `REFERENCE` field, or a `Reference`'s JSON.
    case reference(Reference)
    case array(ArrayNode)
    case object(ObjectNode)
    /// The value a super-encoder writes; read when the tree is written out.
    case slot(NodeSlot)
}

/// Holds the node that a super-encoder writes into, possibly after its
/// parent container has moved on.
class NodeSlot {
    @exclusivity(unchecked) var node: EncodedNode = .null
}

/// The members of a keyed container, in the order they were first written
/// (JSON is written in canonical order, see ``sortedPositions()``).
final class ObjectNode {
    @exclusivity(unchecked) private(set) var keys: [String] = []
    @exclusivity(unchecked) private(set) var values: [EncodedNode] = []
    /// Built once the object is large enough that a linear search for
    /// duplicate keys would cost more than hashing.
    private var index: [String: Int]?

    init() {
        keys.reserveCapacity(4)
        values.reserveCapacity(4)
    }

    /// Sets `key` to `value`; a key written twice keeps its first position
    /// and its last value, as `JSONEncoder` does.
    func set(_ key: String, _ value: EncodedNode) {
        if let position = position(of: key) {
            values[position] = value
            return
        }
        keys.append(key)
        values.append(value)
        if index != nil {
            index![key] = keys.count - 1
        } else if keys.count == 16 {
            var built = [String: Int](minimumCapacity: 32)
            for (i, k) in keys.enumerated() { built[k] = i }
            index = built
        }
    }

    /// The value stored for `key`, if any.
    func value(for key: String) -> EncodedNode? {
        position(of: key).map { values[$0] }
    }

    /// The positions of the members in canonical order: by the UTF-8 bytes
    /// of their keys, compared byte by byte, which is the order of their
    /// Unicode scalars (unlike `String`'s `<`, which compares canonical
    /// equivalents as equal and is not the order the stream encoder sees).
    func sortedPositions() -> [Int] {
        var isSorted = true
        for i in keys.indices.dropFirst() where !Self.precedes(keys[i - 1], keys[i]) {
            isSorted = false
            break
        }
        if isSorted { return Array(keys.indices) }
        return keys.indices.sorted { Self.precedes(keys[$0], keys[$1]) }
    }

    /// Whether `a` comes before `b` in canonical order.
    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        for i in keys.indices where keys[i] == key { return i }
        return nil
    }
}

/// The elements of an unkeyed container.
final class ArrayNode {
    @exclusivity(unchecked) var items: [EncodedNode] = []
}

// MARK: - JSON

extension EncodedNode {
    /// Writes the node as JSON with Foundation's default strategies, so that
    /// `JSONDecoder` reads it back: dates as seconds since 2001, data as
    /// base64, decimals as number literals. Non-finite numbers were refused
    /// when they were encoded.
    ///
    /// The JSON is canonical: every object's members are sorted by key, at
    /// every depth (see ``ObjectNode/sortedPositions()``), so that equal
    /// values give equal bytes whatever order a dictionary iterates in.
    func writeJSON(to writer: inout JSONWriter) {
        writer.makeUnique()
        writeJSONUnchecked(to: &writer)
    }

    /// ``writeJSON(to:)`` into a writer already known to be unique.
    private func writeJSONUnchecked(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.put("null")
        case .bool(let v): writer.put(v ? "true" : "false")
        case .int(let v): writer.putInt(v)
        case .uint(let v): writer.putUInt(v)
        case .double(let v): writer.putDouble(v)
        case .float(let v): writer.putNumber(v)
        case .string(let v): writer.putString(v)
        case .date(let v): writer.putDouble(v.timeIntervalSinceReferenceDate)
        case .data(let v): v.withUnsafeBytes { writer.putBase64($0) }
        case .decimal(let v): writer.appendNumberLiteral(v.description)
        case .reference(let v):
            // The plain `Reference`'s own encoding, which cannot fail.
            let tree = TreeEncoder(path: CodingPath())
            try? v.encode(to: tree)
            tree.node.writeJSONUnchecked(to: &writer)
        case .array(let array):
            writer.put(UInt8(ascii: "["))
            for (i, item) in array.items.enumerated() {
                if i > 0 { writer.put(UInt8(ascii: ",")) }
                item.writeJSONUnchecked(to: &writer)
            }
            writer.put(UInt8(ascii: "]"))
        case .object(let object):
            writer.put(UInt8(ascii: "{"))
            let keys = object.keys
            let values = object.values
            var first = true
            for i in object.sortedPositions() {
                if !first { writer.put(UInt8(ascii: ",")) }
                first = false
                writer.putString(keys[i])
                writer.put(UInt8(ascii: ":"))
                values[i].writeJSONUnchecked(to: &writer)
            }
            writer.put(UInt8(ascii: "}"))
        case .slot(let slot):
            slot.node.writeJSONUnchecked(to: &writer)
        }
    }

    /// The node as JSON bytes in a `Data`.
    func jsonData() -> Data {
        var writer = JSONWriter(capacity: 64)
        writeJSON(to: &writer)
        return writer.withUnsafeBytes { Data($0) }
    }
}

// MARK: - Record fields

extension EncodedNode {
    /// The node with super-encoder slots looked through.
    var resolved: EncodedNode {
        if case .slot(let slot) = self { return slot.node.resolved }
        return self
    }
}

extension EncodedNode {
    /// The record field for this node: scalars map to their field type,
    /// arrays whose elements share one scalar type to the matching list, and
    /// everything else (objects, nested or mixed arrays) to `BYTES` holding
    /// the value's JSON. `nil` means the field is absent.
    func fieldValue(codingPath: @autoclosure () -> [any CodingKey]) throws -> FieldValue? {
        switch self {
        case .null: return nil
        case .bool(let v): return .int64(v ? 1 : 0)
        case .int(let v): return .int64(v)
        case .uint(let v): throw EncodingError.int64Overflow(v, codingPath: codingPath())
        case .double(let v): return .double(v)
        case .float(let v): return .double(Double(v))
        case .string(let v): return .string(v)
        case .date(let v): return .timestamp(try FieldConversion.timestamp(v, codingPath: codingPath()))
        case .data(let v): return .bytes(v)
        case .decimal(let v): return .string(v.description)
        case .reference(let v): return .reference(v)
        case .object: return .bytes(jsonData())
        case .array(let array): return try array.listField(codingPath: codingPath()) ?? .bytes(jsonData())
        case .slot(let slot): return try slot.node.fieldValue(codingPath: codingPath())
        }
    }
}

extension ArrayNode {
    /// The list field for an array of same-typed scalars, or `nil` when the
    /// elements are not all scalars of one type.
    fileprivate func listField(codingPath: @autoclosure () -> [any CodingKey]) throws -> FieldValue? {
        let items = self.items.map(\.resolved)
        guard let first = items.first else { return .stringList([]) }
        switch first {
        case .string:
            var list: [String] = []
            list.reserveCapacity(items.count)
            for item in items {
                guard case .string(let v) = item else { return nil }
                list.append(v)
            }
            return .stringList(list)
        case .int, .bool, .uint:
            var list: [Int64] = []
            list.reserveCapacity(items.count)
            for item in items {
                switch item {
                case .int(let v): list.append(v)
                case .bool(let v): list.append(v ? 1 : 0)
                case .uint(let v): throw EncodingError.int64Overflow(v, codingPath: codingPath())
                default: return nil
                }
            }
            return .int64List(list)
        case .double, .float:
            var list: [Double] = []
            list.reserveCapacity(items.count)
            for item in items {
                switch item {
                case .double(let v): list.append(v)
                case .float(let v): list.append(Double(v))
                default: return nil
                }
            }
            return .doubleList(list)
        case .date:
            var list: [Date] = []
            list.reserveCapacity(items.count)
            for item in items {
                guard case .date(let v) = item else { return nil }
                list.append(try FieldConversion.timestamp(v, codingPath: codingPath()))
            }
            return .timestampList(list)
        case .data:
            var list: [Data] = []
            list.reserveCapacity(items.count)
            for item in items {
                guard case .data(let v) = item else { return nil }
                list.append(v)
            }
            return .bytesList(list)
        case .decimal:
            var list: [String] = []
            list.reserveCapacity(items.count)
            for item in items {
                guard case .decimal(let v) = item else { return nil }
                list.append(v.description)
            }
            return .stringList(list)
        case .reference:
            var list: [Reference] = []
            list.reserveCapacity(items.count)
            for item in items {
                guard case .reference(let v) = item else { return nil }
                list.append(v)
            }
            return .referenceList(list)
        case .null, .array, .object, .slot:
            return nil
        }
    }
}
