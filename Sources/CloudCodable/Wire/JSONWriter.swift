import Foundation

/// Appends JSON text to a byte buffer, fast.
///
/// The writer does not check structure: the caller writes the punctuation
/// with `appendRaw(_:)` and the values with the typed methods, which quote,
/// escape and format. It is the building block of the record wire form
/// (``writeRecord(_:)``) and of the request bodies around it.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.appendRaw(#"{"recordName":"#)
/// writer.appendString("n1")
/// writer.appendRaw(#","count":"#)
/// writer.appendInt(3)
/// writer.append(byte: UInt8(ascii: "}"))
/// // writer.bytes is the UTF-8 of {"recordName":"n1","count":3}
/// ```
///
/// The writer is a value: copies are independent (copy on write). It keeps
/// its own buffer, so appending costs no more than a capacity check and a
/// copy; ``bytes`` makes an array of what was written, and
/// ``withUnsafeBytes(_:)`` lends it without copying.
///
/// (`@unchecked Sendable`: the buffer is only written through a writer
/// that holds the only reference to it, checked with
/// `isKnownUniquelyReferenced` before writing; a buffer that is shared, and
/// so possibly seen by several threads, is never written.)
public struct JSONWriter: @unchecked Sendable {
    @usableFromInline
    internal var storage: JSONWriterStorage
    /// Where the bytes are: the elements of `storage`, cached.
    @usableFromInline
    internal var base: UnsafeMutablePointer<UInt8>
    /// How many bytes fit in `storage`, cached.
    @usableFromInline
    internal var capacity: Int
    @usableFromInline
    internal var length: Int

    /// Creates an empty writer whose buffer has room for `capacity` bytes
    /// before it grows.
    public init(capacity: Int = 256) {
        storage = JSONWriterStorage.make(capacity: capacity)
        base = storage.base
        self.capacity = storage.byteCapacity
        length = 0
    }

    /// The JSON written so far, as UTF-8.
    ///
    /// Each read copies the buffer into a new array (one allocation): read it
    /// once, when the document is complete. ``count``, ``isEmpty`` and
    /// ``withUnsafeBytes(_:)`` look at the bytes without copying.
    public var bytes: [UInt8] {
        withExtendedLifetime(storage) { Array(UnsafeBufferPointer(start: base, count: length)) }
    }

    /// The number of bytes written so far.
    @inlinable
    public var count: Int { length }

    /// Whether nothing has been written (since the last ``removeAll()``).
    @inlinable
    public var isEmpty: Bool { length == 0 }

    /// Calls `body` with the bytes written so far, without copying them. The
    /// buffer is valid only during the call.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withExtendedLifetime(storage) { () throws(Failure) -> Result in
            try body(UnsafeRawBufferPointer(start: base, count: length))
        }
    }

    /// Empties the buffer but keeps its capacity, to write the next document
    /// without allocating.
    public mutating func removeAll() {
        if !isKnownUniquelyReferenced(&storage) {
            storage = JSONWriterStorage.make(capacity: capacity)
            base = storage.base
        }
        length = 0
    }

    // MARK: - Room to write

    /// Makes the buffer unique and able to take `count` more bytes; returns
    /// where they go. The caller then writes them and adds `count` to `length`.
    @inlinable
    @inline(__always)
    internal mutating func reserve(_ count: Int) -> UnsafeMutablePointer<UInt8> {
        if !isKnownUniquelyReferenced(&storage) || length &+ count > capacity {
            grow(count)
        }
        return base + length
    }

    /// Like ``reserve(_:)`` for a writer already known to be unique (inside
    /// one mutating call that made it so).
    @inline(__always)
    internal mutating func reserveUnique(_ count: Int) -> UnsafeMutablePointer<UInt8> {
        if length &+ count > capacity {
            grow(count)
        }
        return base + length
    }

    /// Makes the buffer unique, for a sequence of `put` calls.
    @inline(__always)
    internal mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { grow(0) }
    }

    /// Replaces the buffer by a unique one with room for `count` more bytes,
    /// at least doubling it when it must grow.
    @usableFromInline
    internal mutating func grow(_ count: Int) {
        let needed = length + count
        let newCapacity = needed > capacity ? max(needed, capacity * 2) : capacity
        let newStorage = JSONWriterStorage.make(capacity: newCapacity)
        newStorage.base.initialize(from: base, count: length)
        storage = newStorage
        base = newStorage.base
        capacity = newStorage.byteCapacity
    }

    // MARK: - Unchecked writes (the buffer is unique)

    @inline(__always)
    internal mutating func put(_ byte: UInt8) {
        let target = reserveUnique(1)
        target.pointee = byte
        length &+= 1
    }

    @inline(__always)
    internal mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { put($0) }
    }

    @inline(__always)
    internal mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        let target = reserveUnique(bytes.count)
        target.initialize(from: source, count: bytes.count)
        length &+= bytes.count
    }

    /// Writes `s` quoted and escaped.
    @inline(__always)
    internal mutating func putString(_ s: String) {
        if s.utf8.withContiguousStorageIfAvailable({ putQuoted($0) }) != nil { return }
        var copy = s
        copy.withUTF8 { putQuoted($0) }
    }

    /// Writes UTF-8 `text` quoted and escaped, in one copy when nothing needs
    /// escaping. Text of up to 16 bytes (names, tags, most keys) is checked
    /// and copied in at most two overlapping words.
    @inline(__always)
    internal mutating func putQuoted(_ text: UnsafeBufferPointer<UInt8>) {
        let count = text.count
        if count <= 16, let source = text.baseAddress, JSONText.isShortTextClean(source, count: count) {
            let target = reserveUnique(count &+ 2)
            target.pointee = JSONText.quote
            JSONText.copyShortText(source, to: target + 1, count: count)
            target[count &+ 1] = JSONText.quote
            length &+= count &+ 2
            return
        }
        putQuotedInGeneral(text)
    }

    /// Writes `text` quoted and escaped, eight bytes at a time: the text
    /// before the first escape in one copy, the rest a chunk at a time (each
    /// chunk reserves room for its worst case, every byte a six-byte escape).
    internal mutating func putQuotedInGeneral(_ text: UnsafeBufferPointer<UInt8>) {
        guard let source = text.baseAddress else {
            put(JSONText.quote)
            put(JSONText.quote)
            return
        }
        let count = text.count
        // The text up to its first escape (all of it, usually) in one copy,
        // with room for the rest with a few escapes, so that long text
        // usually fits without the buffer growing (and being copied).
        let clean = JSONText.firstEscapeIndex(text)
        let start = reserveUnique(count &+ count >> 3 &+ 32)
        start.pointee = JSONText.quote
        (start + 1).initialize(from: source, count: clean)
        length &+= clean &+ 1
        if clean < count {
            let raw = UnsafeRawPointer(source)
            let chunk = 1 << 14
            var i = clean
            while i < count {
                let end = min(count, i &+ chunk)
                // Room for the worst case, and for sixteen bytes stored at the end.
                let target = reserveUnique((end &- i) &* 6 &+ 16)
                var o = 0
                while i &+ 8 <= end {
                    if i &+ 16 <= end {
                        // Two clean words at once, the common case.
                        let first = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                        let second = raw.loadUnaligned(fromByteOffset: i &+ 8, as: UInt64.self)
                        if !JSONText.wordNeedsEscape(UInt64(littleEndian: first))
                            && !JSONText.wordNeedsEscape(UInt64(littleEndian: second))
                        {
                            let at = UnsafeMutableRawPointer(target + o)
                            at.storeBytes(of: first, as: UInt64.self)
                            at.storeBytes(of: second, toByteOffset: 8, as: UInt64.self)
                            i &+= 16
                            o &+= 16
                            continue
                        }
                    }
                    let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    UnsafeMutableRawPointer(target + o).storeBytes(of: word, as: UInt64.self)
                    let ordered = UInt64(littleEndian: word)
                    if !JSONText.wordNeedsEscape(ordered) {
                        i &+= 8
                        o &+= 8
                        continue
                    }
                    // The bytes before the first escape are in place.
                    let clean = JSONText.escapeMask(ordered).trailingZeroBitCount >> 3
                    i &+= clean
                    o &+= clean
                    o &+= JSONText.writeEscape(source[i], to: target + o)
                    i &+= 1
                }
                while i < end {
                    let byte = source[i]
                    if JSONText.needsEscape(byte) {
                        o &+= JSONText.writeEscape(byte, to: target + o)
                    } else {
                        target[o] = byte
                        o &+= 1
                    }
                    i &+= 1
                }
                length &+= o
            }
        }
        put(JSONText.quote)
    }

    @inline(__always)
    internal mutating func putInt(_ v: Int64) {
        if v < 0 {
            put(UInt8(ascii: "-"))
        }
        putUInt(v.magnitude)
    }

    internal mutating func putUInt(_ v: UInt64) {
        let digits = JSONText.digitCount(v)
        let target = reserveUnique(digits)
        JSONText.writeDigits(v, count: digits, to: target)
        length &+= digits
    }

    /// Writes the shortest round-trip text of a finite `Double` (as its
    /// `description`), or `null`: short plain decimals directly, the rest
    /// through the standard library.
    @inline(__always)
    internal mutating func putDouble(_ v: Double) {
        let target = reserveUnique(32)
        let count = JSONText.writeShortDecimal(v, to: target)
        if count > 0 {
            length &+= count
            return
        }
        putNumber(v)
    }

    /// Writes the shortest round-trip text of a finite `Double` or `Float`,
    /// or `null`, through the standard library.
    @inline(__always)
    internal mutating func putNumber<Number: BinaryFloatingPoint & TextOutputStreamable>(_ v: Number) {
        guard v.isFinite else {
            put("null")
            return
        }
        // The standard library prints into a stack buffer and hands it to
        // `_writeASCII`; the sink keeps it on the stack too.
        var sink = NumberTextSink()
        v.write(to: &sink)
        sink.withBytes { put($0) }
    }

    internal mutating func putBase64(_ bytes: UnsafeRawBufferPointer) {
        let encoded = Base64.encodedCount(bytes.count)
        let target = reserveUnique(encoded &+ 2)
        target.pointee = JSONText.quote
        Base64.encode(bytes, to: target + 1)
        target[encoded &+ 1] = JSONText.quote
        length &+= encoded &+ 2
    }

    // MARK: - Public appends

    /// Appends one byte as is.
    @inlinable
    public mutating func append(byte: UInt8) {
        let target = reserve(1)
        target.pointee = byte
        length &+= 1
    }

    /// Appends `text` as is, without quoting: punctuation and keys, for
    /// example `#","name":"#`.
    @inlinable
    public mutating func appendRaw(_ text: StaticString) {
        text.withUTF8Buffer { text in
            let target = reserve(text.count)
            if let source = text.baseAddress { target.initialize(from: source, count: text.count) }
            length &+= text.count
        }
    }

    /// Appends `bytes` as they are: text that already is JSON, such as a
    /// stored document.
    public mutating func appendRaw(_ bytes: UnsafeRawBufferPointer) {
        makeUnique()
        put(bytes.assumingMemoryBound(to: UInt8.self))
    }

    /// Appends `bytes` as they are: text that already is JSON, such as a
    /// stored document.
    public mutating func appendRaw(_ bytes: [UInt8]) {
        makeUnique()
        bytes.withUnsafeBufferPointer { put($0) }
    }

    /// Appends `s` as a JSON string: in quotes, with `"`, `\` and the control
    /// characters below U+0020 escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else
    /// `\u00XX`). `/` and non-ASCII characters are written as they are, in UTF-8.
    public mutating func appendString(_ s: String) {
        makeUnique()
        putString(s)
    }

    /// Appends `v` in decimal. `Int64.min` is fine.
    public mutating func appendInt(_ v: Int64) {
        makeUnique()
        putInt(v)
    }

    /// Appends `v` in decimal.
    public mutating func appendUInt(_ v: UInt64) {
        makeUnique()
        putUInt(v)
    }

    /// Appends the shortest text that reads back as exactly `v`, the same as
    /// `v.description` (`2.0`, `1e-05`, `1e+20`, `-0.0`), all valid JSON numbers.
    ///
    /// JSON has no infinities or NaN: for a value that is not finite this
    /// writes `null`. Callers that must not lose such a value check
    /// `isFinite` first and report an error instead.
    public mutating func appendDouble(_ v: Double) {
        makeUnique()
        putDouble(v)
    }

    /// Appends the shortest text that reads back as exactly `v` as a `Float`,
    /// like `v.description`. For a value that is not finite this writes `null`
    /// (see ``appendDouble(_:)``).
    public mutating func appendFloat(_ v: Float) {
        makeUnique()
        putNumber(v)
    }

    /// Appends `text` as is, as a number: for example a `Decimal`'s
    /// description. The caller guarantees that it is a JSON number.
    public mutating func appendNumberLiteral(_ text: String) {
        makeUnique()
        if text.utf8.withContiguousStorageIfAvailable({ put($0) }) != nil { return }
        var copy = text
        copy.withUTF8 { put($0) }
    }

    /// Appends `data` as a JSON string of standard, padded base64.
    public mutating func appendBase64String(_ data: Data) {
        makeUnique()
        data.withUnsafeBytes { putBase64($0) }
    }

    /// Appends `bytes` as a JSON string of standard, padded base64.
    public mutating func appendBase64String(_ bytes: UnsafeRawBufferPointer) {
        makeUnique()
        putBase64(bytes)
    }
}

/// The buffer of a ``JSONWriter``: its capacity (the header) and the bytes,
/// in one allocation.
@usableFromInline
final class JSONWriterStorage: ManagedBuffer<Int, UInt8> {
    /// A storage with room for at least `capacity` bytes.
    @usableFromInline
    static func make(capacity: Int) -> JSONWriterStorage {
        let capacity = max(capacity, 16)
        let buffer = create(minimumCapacity: capacity) { _ in capacity }
        return unsafeDowncast(buffer, to: JSONWriterStorage.self)
    }

    /// How many bytes fit.
    @inlinable
    var byteCapacity: Int {
        @inline(__always) get { withUnsafeMutablePointerToHeader { $0.pointee } }
    }

    /// Where the bytes are. Valid as long as the storage lives.
    @inlinable
    var base: UnsafeMutablePointer<UInt8> {
        @inline(__always) get { withUnsafeMutablePointerToElements { $0 } }
    }
}

/// A text stream that keeps the (at most 32-byte) text of one number on the
/// stack.
struct NumberTextSink: TextOutputStream {
    private var storage: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var count = 0
    /// Text beyond 32 bytes, which the standard library never produces for a number.
    private var overflow: [UInt8] = []

    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { _writeASCII($0) }
    }

    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        guard buffer.count > 0 else { return }
        if overflow.isEmpty, count + buffer.count <= 32 {
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.baseAddress!.advanced(by: count).copyMemory(from: buffer.baseAddress!, byteCount: buffer.count)
            }
            count += buffer.count
        } else {
            if overflow.isEmpty {
                withUnsafeBytes(of: storage) { overflow.append(contentsOf: $0.prefix(count)) }
            }
            overflow.append(contentsOf: buffer)
        }
    }

    /// Calls `body` with the text written.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if !overflow.isEmpty { return overflow.withUnsafeBufferPointer(body) }
        return withUnsafeBytes(of: storage) { raw in
            body(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count))
        }
    }
}
