import Foundation

/// Writes a nested value straight to JSON, without building a tree: the fast
/// path for structs stored in `BYTES` fields.
///
/// Codable lets a caller keep a container and write to it after a sibling,
/// or write a key twice; JSON written front to back cannot follow that. The
/// stream encoder therefore checks that containers are used in nesting
/// order and keys are not repeated, and when either is broken it gives up
/// (``Result/fallback``) and the caller encodes the value again with
/// ``TreeEncoder``. The same happens for large objects, where checking keys
/// linearly would be slow. An unkeyed root is decided by its first element
/// (see ``RootUnkeyedEncodingContainer``): single values may form a list
/// field, which only the tree can tell, so the tree encoder takes the value
/// over; objects and arrays make it JSON, which the stream writes.
///
/// Objects come out canonical, members sorted by key as
/// ``ObjectNode/sortedPositions()`` sorts them: an object whose keys arrive
/// out of order (a dictionary's, or a struct's declared out of order) has
/// its members reordered in the buffer when it closes.
///
/// It stays, beside the tree encoder that could write every nested value
/// alone, because building the tree for a model's nested structs takes the
/// codec's encode ratio to `JSONEncoder` below the floor CI holds it to
/// (Benchmarks/README.md, "Codec review").
final class StreamEncoder: Encoder {
    enum Result {
        /// The root was a single value (a raw-value enum, a wrapper), or
        /// an unkeyed container that the tree encoder took over.
        case scalar(EncodedNode)
        /// The root was a keyed container, written as JSON: the writer
        /// holds it until the next value.
        case json
        /// The value must be encoded again with ``TreeEncoder``.
        case fallback
    }

    private struct Frame {
        var serial: Int
        var isObject: Bool
        var count: Int
        /// Where this object's keys start in `keys`.
        var keyStart: Int
        /// A summary of its keys (see ``FieldNameSummary``): a key whose bit
        /// is clear is new, without comparing it with the others.
        var seen: FieldNameSummary
        /// Whether its keys so far came in canonical order; if not, its
        /// members are sorted when it closes.
        var isSorted = true
    }

    /// Objects with more keys than this go through the tree encoder, whose
    /// duplicate check is a hash lookup.
    private static var maximumStreamedKeys: Int { 32 }

    // One encoder serves one call of `encodeRoot` at a time, and its writer
    // is never copied: after `removeAll()` it is unique, and the unchecked
    // writes below rely on that.
    @exclusivity(unchecked) var writer = JSONWriter(capacity: 128)
    @exclusivity(unchecked) private var stack: [Frame] = []
    /// Where the keys of the open objects are in the writer's buffer (their
    /// text between the quotes, which is the key: keys that need escapes
    /// are not streamed).
    @exclusivity(unchecked) private var keys: [(start: Int32, count: Int32)] = []
    @exclusivity(unchecked) private var nextSerial = 0
    @exclusivity(unchecked) private var expectingValue = false
    @exclusivity(unchecked) private var failed = false
    @exclusivity(unchecked) private var rootScalar: EncodedNode?
    /// How the current value's unkeyed root is written, once it has one
    /// (see ``RootUnkeyedEncodingContainer``).
    enum RootList {
        /// The root is not an unkeyed container (or not yet).
        case none
        /// The root asked for an unkeyed container; no element has come yet.
        case undecided
        /// The first element was a single value: the elements may form a
        /// list field, which only the tree can tell, so the tree encoder
        /// holds the value (and answers the root's further requests).
        case tree(TreeEncoder, ArrayNode)
        /// The first element was an object or an array: the value is JSON,
        /// streamed as an array (the container's serial).
        case stream(Int)
    }
    @exclusivity(unchecked) private(set) var rootList = RootList.none
    /// Counts the values encoded, so that a root unkeyed container kept
    /// past its value is told apart from the current one.
    @exclusivity(unchecked) private(set) var valueCount = 0
    @exclusivity(unchecked) private(set) var path = CodingPath()
    /// The path of the current value's root, for its unkeyed container.
    @exclusivity(unchecked) private(set) var rootPath = CodingPath()

    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init() {
        stack.reserveCapacity(8)
        keys.reserveCapacity(16)
    }

    /// Whether keeping this encoder for later values is worth its memory:
    /// not after a value that grew its buffers far beyond the usual.
    var isWorthKeeping: Bool {
        writer.capacity <= 1 << 16 && stack.capacity <= 64 && keys.capacity <= 256
    }

    /// Encodes `value` as the root of a nested value at `path`.
    func encodeRoot<T: Encodable>(_ value: T, path: CodingPath) throws -> Result {
        writer.removeAll()
        stack.removeAll(keepingCapacity: true)
        keys.removeAll(keepingCapacity: true)
        expectingValue = true
        failed = false
        rootScalar = nil
        rootList = .none
        valueCount &+= 1
        self.path = path
        rootPath = path
        // The paths stay until the next value replaces them: resetting them
        // costs as much as setting them.
        try value.encode(to: self)
        if failed { return .fallback }
        switch rootList {
        case .tree(let tree, let array):
            rootList = .none
            if TreeEncoder.isUnordered(T.self) { array.sortAsSet() }
            return .scalar(tree.node)
        case .undecided:
            // An empty unkeyed root, as the tree encoder gives it.
            rootList = .none
            return .scalar(.array(ArrayNode()))
        case .stream where TreeEncoder.isUnordered(T.self):
            // A set of objects or arrays: the tree sorts its elements.
            return .fallback
        case .none, .stream:
            break
        }
        if writer.isEmpty { return .scalar(rootScalar ?? .null) }
        closeFrames(above: 0)
        return .json
    }

    // MARK: Encoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .tree(let tree, _) = rootList { return tree.container(keyedBy: type) }
        let serial = open(isObject: true)
        return KeyedEncodingContainer(StreamKeyedEncodingContainer<Key>(encoder: self, serial: serial, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        switch rootList {
        case .tree(let tree, _): return tree.unkeyedContainer()
        case .undecided: return RootUnkeyedEncodingContainer(encoder: self)
        case .none where stack.isEmpty && writer.isEmpty && expectingValue && !failed:
            // Its first element tells how the value is written.
            rootList = .undecided
            return RootUnkeyedEncodingContainer(encoder: self)
        case .none, .stream:
            break
        }
        let serial = open(isObject: false)
        return StreamUnkeyedEncodingContainer(encoder: self, serial: serial, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        if case .tree(let tree, _) = rootList { return tree.singleValueContainer() }
        if !expectingValue { failed = true }
        return StreamSingleValueEncodingContainer(encoder: self)
    }

    // MARK: The unkeyed root

    /// The root list as it stands after an element whose kind is known:
    /// a single value settles an undecided root on the tree, an object or
    /// an array on the stream. `nil` when the element cannot be written
    /// (the root has become something else): the value then goes back to
    /// the tree encoder as a whole.
    func rootList(forSingleValue isSingleValue: Bool) -> RootList? {
        guard case .undecided = rootList else { return rootList }
        guard stack.isEmpty, writer.isEmpty, expectingValue, !failed else {
            failed = true
            return nil
        }
        if isSingleValue {
            let tree = TreeEncoder(path: rootPath)
            rootList = .tree(tree, tree.rootArray())
        } else {
            rootList = .stream(open(isObject: false))
        }
        return rootList
    }

    /// Notes that a container kept from an earlier value was written to:
    /// the current value goes back to the tree encoder as a whole.
    func fail() {
        failed = true
    }

    // MARK: Structure

    /// Opens a container for the value being written; any other use (a
    /// second container for the same value) gives up.
    private func open(isObject: Bool) -> Int {
        nextSerial &+= 1
        guard expectingValue, !failed else {
            failed = true
            return -1
        }
        expectingValue = false
        writer.put(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
        stack.append(
            Frame(serial: nextSerial, isObject: isObject, count: 0, keyStart: keys.count, seen: FieldNameSummary()))
        return nextSerial
    }

    private func closeFrames(above depth: Int) {
        while stack.count > depth {
            let frame = stack.removeLast()
            if !frame.isSorted { sortMembers(from: frame.keyStart) }
            writer.put(frame.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
            keys.removeSubrange(frame.keyStart...)
        }
    }

    /// Puts the members of the innermost object, whose keys are those from
    /// `keyStart` on, in canonical order, where they are in the buffer. Its
    /// members are complete, and their values already canonical (nested
    /// objects closed first), so each moves as a block of bytes.
    private func sortMembers(from keyStart: Int) {
        let count = keys.count &- keyStart
        guard count > 1 else { return }
        let base = writer.base
        // A member runs from its key's opening quote to the comma before
        // the next member, or to the end of the buffer for the last one.
        let regionStart = Int(keys[keyStart].start) &- 1
        let regionCount = writer.length &- regionStart
        withExtendedLifetime(writer.storage) {
            withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { order in
                for i in 0..<count {
                    // Insertion sort: objects here have at most 32 members.
                    var j = i
                    while j > 0, Self.precedes(keys[keyStart &+ i], keys[keyStart &+ order[j &- 1]], in: base) {
                        order[j] = order[j &- 1]
                        j &-= 1
                    }
                    order[j] = i
                }
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: regionCount) { copy in
                    let copy = copy.baseAddress!
                    copy.update(from: base + regionStart, count: regionCount)
                    var target = base + regionStart
                    for k in 0..<count {
                        let member = order[k]
                        let start = Int(keys[keyStart &+ member].start) &- 1
                        let end =
                            member &+ 1 < count ? Int(keys[keyStart &+ member &+ 1].start) &- 2 : writer.length
                        if k > 0 {
                            target.pointee = UInt8(ascii: ",")
                            target += 1
                        }
                        target.update(from: copy + (start &- regionStart), count: end &- start)
                        target += end &- start
                    }
                }
            }
        }
    }

    /// Whether key `a` comes before key `b` in canonical order (see
    /// ``ObjectNode/sortedPositions()``), both read from the buffer at `base`.
    @inline(__always)
    private static func precedes(
        _ a: (start: Int32, count: Int32), _ b: (start: Int32, count: Int32), in base: UnsafePointer<UInt8>
    ) -> Bool {
        let shorter = Int(min(a.count, b.count))
        let order = shorter == 0 ? 0 : memcmp(base + Int(a.start), base + Int(b.start), shorter)
        return order != 0 ? order < 0 : a.count < b.count
    }

    /// Makes the container `serial` the innermost open one, closing the
    /// containers its earlier members left open. `false` when it was closed.
    private func activate(_ serial: Int) -> Bool {
        guard !failed, !expectingValue else {
            failed = true
            return false
        }
        if stack.last?.serial == serial { return true }
        guard let depth = stack.lastIndex(where: { $0.serial == serial }) else {
            failed = true
            return false
        }
        closeFrames(above: depth + 1)
        return true
    }

    /// Writes the separator and key of a new member of object `serial`.
    /// A key given twice, or one that needs escapes, gives up.
    @inline(__always)
    func beginMember(_ serial: Int, _ key: String) -> Bool {
        guard activate(serial) else { return false }
        var key = key
        return key.withUTF8 { name in
            let top = stack.count &- 1
            let frame = stack[top]
            let count = name.count
            guard frame.count < Self.maximumStreamedKeys, writer.count < Int(Int32.max) / 2,
                JSONText.firstEscapeIndex(name) == count
            else {
                failed = true
                return false
            }
            let bit = FieldNameSummary.bit(of: name)
            if frame.seen.contains(bit), hasKey(name, from: frame.keyStart) {
                failed = true
                return false
            }
            if frame.count > 0 { writer.put(UInt8(ascii: ",")) }
            writer.put(JSONText.quote)
            let start = writer.length
            writer.put(name)
            writer.put(JSONText.quote)
            writer.put(UInt8(ascii: ":"))
            let key = (start: Int32(truncatingIfNeeded: start), count: Int32(truncatingIfNeeded: count))
            if frame.isSorted, frame.count > 0, !Self.precedes(keys[keys.count &- 1], key, in: writer.base) {
                stack[top].isSorted = false
            }
            keys.append(key)
            stack[top].count &+= 1
            stack[top].seen.insert(bit)
            expectingValue = true
            return true
        }
    }

    /// Whether one of the keys from `keyStart` on is `name`.
    private func hasKey(_ name: UnsafeBufferPointer<UInt8>, from keyStart: Int) -> Bool {
        writer.withUnsafeBytes { raw in
            for i in keyStart..<keys.count where Int(keys[i].count) == name.count {
                if name.isEmpty
                    || JSONScanner.equal(raw.baseAddress! + Int(keys[i].start), name.baseAddress!, count: name.count)
                {
                    return true
                }
            }
            return false
        }
    }

    /// Writes the separator before a new element of array `serial`.
    func beginElement(_ serial: Int) -> Bool {
        guard activate(serial) else { return false }
        let top = stack.count - 1
        if stack[top].count > 0 { writer.put(UInt8(ascii: ",")) }
        stack[top].count += 1
        expectingValue = true
        return true
    }

    /// The number of elements written to array `serial`.
    func count(of serial: Int) -> Int {
        stack.last(where: { $0.serial == serial })?.count ?? 0
    }

    // MARK: Values

    /// Writes a scalar where a value is expected.
    func write(_ node: EncodedNode) {
        guard expectingValue, !failed else {
            failed = true
            return
        }
        expectingValue = false
        if stack.isEmpty && writer.isEmpty {
            rootScalar = node
        } else {
            node.writeJSON(to: &writer)
        }
    }

    /// Writes the value of the member that ``beginMember(_:_:)`` began
    /// (which made a value expected, inside an object).
    @inline(__always)
    func writeMember(_ body: (inout JSONWriter) -> Void) {
        expectingValue = false
        body(&writer)
    }

    /// Writes any value where a value is expected.
    func write<T: Encodable>(_ value: T, path: @autoclosure () -> CodingPath) throws {
        if let node = try TreeEncoder.knownNode(value, path: path()) {
            write(node)
            return
        }
        let depth = stack.count
        let start = writer.length
        let outer = self.path
        let valuePath = path()
        self.path = valuePath
        defer { self.path = outer }
        try value.encode(to: self)
        if failed { return }
        if expectingValue {
            // The value asked for no container: JSONEncoder writes `{}`.
            expectingValue = false
            writer.put("{}")
        }
        closeFrames(above: depth)
        // Only an array can be a set, and looking at its first byte is
        // cheaper than asking about every value's type.
        if writer.length > start, writer.base[start] == UInt8(ascii: "["), TreeEncoder.isUnordered(T.self) {
            writer.length = start
            try TreeEncoder.node(for: value, path: valuePath).writeJSON(to: &writer)
        }
    }
}

struct StreamKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: StreamEncoder
    /// The container's object: once it is closed (its value done, say),
    /// writing through the container makes the current value fall back.
    let serial: Int
    let path: CodingPath

    init(encoder: StreamEncoder, serial: Int, path: CodingPath) {
        self.encoder = encoder
        self.serial = serial
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }

    @inline(__always)
    private func put(_ key: Key, _ node: @autoclosure () throws -> EncodedNode) rethrows {
        guard encoder.beginMember(serial, key.stringValue) else { return }
        encoder.write(try node())
    }

    mutating func encodeNil(forKey key: Key) throws { put(key, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        guard encoder.beginMember(serial, key.stringValue) else { return }
        encoder.writeMember { $0.put(value ? "true" : "false") }
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        guard encoder.beginMember(serial, key.stringValue) else { return }
        encoder.writeMember { $0.putString(value) }
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        let value = try FieldConversion.finite(value, codingPath: path.appending(key).keys)
        guard encoder.beginMember(serial, key.stringValue) else { return }
        encoder.writeMember { $0.putDouble(value) }
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try put(key, .float(Float(try FieldConversion.finite(Double(value), codingPath: path.appending(key).keys))))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        guard encoder.beginMember(serial, key.stringValue) else { return }
        encoder.writeMember { $0.putInt(Int64(value)) }
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(key, .int(Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(key, .int(Int64(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(key, .int(Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(key, .int(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(key, .unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(key, .int(Int64(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(key, .int(Int64(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(key, .int(Int64(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(key, .unsigned(value)) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        guard encoder.beginMember(serial, key.stringValue) else { return }
        try encoder.write(value, path: path.appending(key))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        _ = encoder.beginMember(serial, key.stringValue)
        let nested = encoder.container(keyedBy: NestedKey.self)
        return nested
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        _ = encoder.beginMember(serial, key.stringValue)
        return encoder.unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { giveUp() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { giveUp() }

    /// Super-encoders write after their parent moves on; only the tree can hold that.
    private func giveUp() -> any Encoder {
        _ = encoder.beginMember(-1, "")
        return TreeEncoder(path: path)
    }
}

struct StreamUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: StreamEncoder
    let serial: Int
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var count: Int { encoder.count(of: serial) }

    @inline(__always)
    private func put(_ node: @autoclosure () throws -> EncodedNode) rethrows {
        guard encoder.beginElement(serial) else { return }
        encoder.write(try node())
    }

    mutating func encodeNil() throws { put(.null) }
    mutating func encode(_ value: Bool) throws { put(.bool(value)) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws {
        try put(.double(try FieldConversion.finite(value, codingPath: path.appending(index: count).keys)))
    }
    mutating func encode(_ value: Float) throws {
        try put(.float(Float(try FieldConversion.finite(Double(value), codingPath: path.appending(index: count).keys))))
    }
    mutating func encode(_ value: Int) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { put(.int(value)) }
    mutating func encode(_ value: UInt) throws { put(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { put(.unsigned(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let elementPath = path.appending(index: count)
        guard encoder.beginElement(serial) else { return }
        try encoder.write(value, path: elementPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        _ = encoder.beginElement(serial)
        return encoder.container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = encoder.beginElement(serial)
        return encoder.unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        _ = encoder.beginElement(-1)
        return TreeEncoder(path: path)
    }
}

struct StreamSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: StreamEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.write(.null) }
    mutating func encode(_ value: Bool) throws { encoder.write(.bool(value)) }
    mutating func encode(_ value: String) throws { encoder.write(.string(value)) }
    mutating func encode(_ value: Double) throws {
        encoder.write(.double(try FieldConversion.finite(value, codingPath: codingPath)))
    }
    mutating func encode(_ value: Float) throws {
        encoder.write(.float(Float(try FieldConversion.finite(Double(value), codingPath: codingPath))))
    }
    mutating func encode(_ value: Int) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { encoder.write(.int(value)) }
    mutating func encode(_ value: UInt) throws { encoder.write(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { encoder.write(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { encoder.write(.unsigned(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        // A wrapper forwards to its value at the same place.
        if let node = try TreeEncoder.knownNode(value, path: encoder.path) {
            encoder.write(node)
        } else if TreeEncoder.isUnordered(T.self) {
            // A wrapper of a set: the tree sorts its elements.
            encoder.write(try TreeEncoder.node(for: value, path: encoder.path))
        } else {
            try value.encode(to: encoder)
        }
    }
}

/// The unkeyed container of a nested value's root. Its first element
/// decides how the value is written: a single value hands the value to the
/// tree encoder (the elements may form a list field), an object or an array
/// makes it a JSON array written by the stream (an array of structs, say),
/// without building a tree for every element.
struct RootUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: StreamEncoder
    /// The value this container belongs to.
    let value: Int

    init(encoder: StreamEncoder) {
        self.encoder = encoder
        value = encoder.valueCount
    }

    var codingPath: [any CodingKey] { encoder.rootPath.keys }

    var count: Int {
        guard value == encoder.valueCount else { return 0 }
        switch encoder.rootList {
        case .tree(_, let array): return array.items.count
        case .stream(let serial): return encoder.count(of: serial)
        case .none, .undecided: return 0
        }
    }

    /// Writes an element through the container that now holds the list.
    @inline(__always)
    private func forward(
        isSingleValue: Bool, _ tree: (inout TreeUnkeyedEncodingContainer) throws -> Void,
        _ stream: (inout StreamUnkeyedEncodingContainer) throws -> Void
    ) rethrows {
        guard value == encoder.valueCount else { return encoder.fail() }
        switch encoder.rootList(forSingleValue: isSingleValue) {
        case .tree(_, let array)?:
            var container = TreeUnkeyedEncodingContainer(array: array, path: encoder.rootPath)
            try tree(&container)
        case .stream(let serial)?:
            var container = StreamUnkeyedEncodingContainer(encoder: encoder, serial: serial, path: encoder.rootPath)
            try stream(&container)
        case .none?, .undecided?, nil:
            encoder.fail()
        }
    }

    mutating func encodeNil() throws {
        try forward(isSingleValue: true, { try $0.encodeNil() }, { try $0.encodeNil() })
    }
    mutating func encode(_ v: Bool) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: String) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Double) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Float) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Int) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Int8) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Int16) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Int32) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: Int64) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: UInt) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: UInt8) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: UInt16) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: UInt32) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }
    mutating func encode(_ v: UInt64) throws {
        try forward(isSingleValue: true, { try $0.encode(v) }, { try $0.encode(v) })
    }

    mutating func encode<T: Encodable>(_ element: T) throws {
        guard value == encoder.valueCount else { return encoder.fail() }
        if case .undecided = encoder.rootList {
            // What the first element is only its own encoding can tell: a
            // tree of it says. A single value joins the tree as it is; an
            // object or an array is written again through the stream, so
            // that a container it keeps stays under the stream's checks.
            let node = try TreeEncoder.node(for: element, path: encoder.rootPath.appending(index: 0))
            switch node {
            case .object, .array:
                break
            default:
                guard case .tree(_, let array)? = encoder.rootList(forSingleValue: true) else {
                    return encoder.fail()
                }
                array.items.append(node)
                return
            }
        }
        try forward(isSingleValue: false, { try $0.encode(element) }, { try $0.encode(element) })
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        var result: KeyedEncodingContainer<NestedKey>?
        forward(
            isSingleValue: false, { result = $0.nestedContainer(keyedBy: keyType) },
            { result = $0.nestedContainer(keyedBy: keyType) })
        // A container for a value already gone back to the tree: its writes go nowhere.
        return result
            ?? KeyedEncodingContainer(TreeKeyedEncodingContainer(object: ObjectNode(), path: encoder.rootPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        var result: (any UnkeyedEncodingContainer)?
        forward(
            isSingleValue: false, { result = $0.nestedUnkeyedContainer() }, { result = $0.nestedUnkeyedContainer() })
        return result ?? TreeUnkeyedEncodingContainer(array: ArrayNode(), path: encoder.rootPath)
    }

    mutating func superEncoder() -> any Encoder {
        var result: (any Encoder)?
        forward(isSingleValue: true, { result = $0.superEncoder() }, { result = $0.superEncoder() })
        return result ?? TreeEncoder(path: encoder.rootPath)
    }
}
