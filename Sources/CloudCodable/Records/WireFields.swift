import Foundation

/// The fields of a record kept as their wire text: the `fields` object
/// exactly as ``WireFormat`` reads or writes it, and a table of where each
/// field's name and value are in it.
///
/// ``WireFormat/decodeRecord(from:)-([UInt8])`` and ``RecordEncoder`` make
/// records whose fields are held this way, so that the fields never exist
/// as `String`s and ``FieldValue``s on the way from a model to the wire or
/// from the wire to a model. Everything else reads a field by parsing its
/// value from the text, and the first change to the fields turns them into
/// ordinary entries (see ``RecordFields``).
///
/// Only the compact form the writer produces is kept this way, with values
/// of the types the table can describe (scalars, bytes and lists of
/// scalars); every value was checked when the table was made, as strictly
/// as the reader checks it, so parsing it again cannot fail.
///
/// One allocation holds the header, the table and the text. The storage
/// is never changed after it is made, so it may be shared between threads
/// (hence `@unchecked Sendable`: `ManagedBuffer` itself is not `Sendable`).
@usableFromInline
struct WireFields: @unchecked Sendable {
    @usableFromInline
    struct Header {
        var slotCount: Int
        var textCount: Int
        /// Whether the whole text is exactly what the writer writes for these
        /// fields, so that it can be copied as it is.
        var isCanonical: Bool
    }

    /// Where one field is in the text.
    @usableFromInline
    struct Slot {
        /// The offset of the name's first byte (after its quote), and its length.
        /// Names with escapes are never kept this way.
        var nameStart: Int32
        var nameCount: Int32
        /// The offsets of the value's first byte and of the byte after it.
        var valueStart: Int32
        var valueEnd: Int32
        /// INT64 and TIMESTAMP: the integer's bits; DOUBLE: the double's bits.
        var scalar: UInt64
        var type: FieldType
        /// Whether the value's text is what the writer writes for the value.
        var isCanonical: Bool
    }

    @usableFromInline
    final class Storage: ManagedBuffer<Header, Slot> {}

    @usableFromInline let storage: Storage

    /// The largest text a table can describe (offsets are 32 bits).
    static var maximumTextCount: Int { Int(Int32.max) }

    /// Makes fields from a table and the text it describes.
    static func make(slots: UnsafeBufferPointer<Slot>, text: UnsafeRawBufferPointer, isCanonical: Bool)
        -> WireFields
    {
        let stride = MemoryLayout<Slot>.stride
        let textSlots = (text.count + stride - 1) / stride
        let buffer = Storage.create(minimumCapacity: slots.count + textSlots) { _ in
            Header(slotCount: slots.count, textCount: text.count, isCanonical: isCanonical)
        }
        let storage = unsafeDowncast(buffer, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { elements in
            if let base = slots.baseAddress { elements.initialize(from: base, count: slots.count) }
            let textStart = UnsafeMutableRawPointer(elements + slots.count)
            if let source = text.baseAddress { textStart.copyMemory(from: source, byteCount: text.count) }
        }
        return WireFields(storage: storage)
    }

    /// The number of fields.
    var count: Int { storage.header.slotCount }

    var isCanonical: Bool { storage.header.isCanonical }

    /// Calls `body` with the table and the text.
    @inline(__always)
    func withSlots<R>(_ body: (UnsafeBufferPointer<Slot>, UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try storage.withUnsafeMutablePointers { header, elements in
            let count = header.pointee.slotCount
            let text = UnsafeRawPointer(elements + count).assumingMemoryBound(to: UInt8.self)
            return try body(
                UnsafeBufferPointer(start: elements, count: count),
                UnsafeBufferPointer(start: text, count: header.pointee.textCount))
        }
    }

    /// The slot of field `i`.
    @inline(__always)
    func slot(_ i: Int) -> Slot {
        storage.withUnsafeMutablePointerToElements { $0[i] }
    }

    // MARK: Names

    /// The name of field `i`.
    func name(at i: Int) -> String {
        withSlots { slots, text in
            let slot = slots[i]
            return String(
                decoding: UnsafeBufferPointer(
                    rebasing: text[Int(slot.nameStart)..<Int(slot.nameStart + slot.nameCount)]), as: UTF8.self)
        }
    }

    /// The position of the field named `name`, trying `hint` first (readers
    /// that ask for fields in the order they were written find each one at
    /// the first comparison).
    @inline(__always)
    func position(of name: String, hint: Int = 0) -> Int? {
        var name = name
        return name.withUTF8 { key in
            withSlots { slots, text in
                let count = slots.count
                guard count > 0, let textBase = text.baseAddress else { return nil }
                let length = Int32(truncatingIfNeeded: key.count)
                @inline(__always)
                func matches(_ i: Int) -> Bool {
                    let slot = slots[i]
                    return slot.nameCount == length
                        && (length == 0
                            || JSONScanner.equal(textBase + Int(slot.nameStart), key.baseAddress!, count: key.count))
                }
                if hint < count, matches(hint) { return hint }
                var i = 0
                while i < count {
                    if i != hint, matches(i) { return i }
                    i &+= 1
                }
                return nil
            }
        }
    }

    // MARK: Values

    /// The value of field `i`.
    func value(at i: Int) -> FieldValue {
        withSlots { slots, text in
            Self.value(slots[i], in: text)
        }
    }

    /// The value that `slot` describes in `text`.
    static func value(_ slot: Slot, in text: UnsafeBufferPointer<UInt8>) -> FieldValue {
        switch slot.type {
        case .int64: return .int64(Int64(bitPattern: slot.scalar))
        case .double: return .double(Double(bitPattern: slot.scalar))
        case .timestamp: return .timestamp(Milliseconds.date(Int64(bitPattern: slot.scalar)))
        case .string where slot.isCanonical:
            // The text between the quotes, unescaped and checked.
            let start = Int(slot.valueStart) + 1
            let end = Int(slot.valueEnd) - 1
            return .string(String(decoding: UnsafeBufferPointer(rebasing: text[start..<end]), as: UTF8.self))
        default:
            var reader = WireRecordReader(UnsafeRawBufferPointer(text))
            reader.scanner.position = Int(slot.valueStart)
            do {
                guard let value = try reader.readValue(slot.type, depth: 2) else {
                    preconditionFailure("Internal inconsistency: a kept field holds null")
                }
                return value
            } catch {
                preconditionFailure("Internal inconsistency: a kept field does not read back: \(error)")
            }
        }
    }

    /// Materializes every field, in order.
    func entries() -> [RecordFields.Entry] {
        withSlots { slots, text in
            var entries: [RecordFields.Entry] = []
            entries.reserveCapacity(slots.count)
            for slot in slots {
                let name = String(
                    decoding: UnsafeBufferPointer(
                        rebasing: text[Int(slot.nameStart)..<Int(slot.nameStart + slot.nameCount)]),
                    as: UTF8.self)
                entries.append(RecordFields.Entry(name: name, value: Self.value(slot, in: text)))
            }
            return entries
        }
    }

    // MARK: Typed reads, for the decoder

    /// The value text of field `i`.
    @inline(__always)
    func withValueText<R>(at i: Int, _ body: (Slot, UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> R) -> R {
        withSlots { slots, text in
            let slot = slots[i]
            return body(slot, UnsafeBufferPointer(rebasing: text[Int(slot.valueStart)..<Int(slot.valueEnd)]), text)
        }
    }

    /// The string of STRING field `i`.
    func string(at i: Int) -> String {
        withValueText(at: i) { slot, value, text in
            if slot.isCanonical {
                return String(decoding: UnsafeBufferPointer(rebasing: value.dropFirst().dropLast()), as: UTF8.self)
            }
            guard case .string(let string) = Self.value(slot, in: text) else {
                preconditionFailure("Internal inconsistency: a STRING field holds another value")
            }
            return string
        }
    }

    /// The UUID that STRING field `i` spells, or `nil` when it spells none.
    func uuid(at i: Int) -> UUID? {
        withValueText(at: i) { slot, value, _ in
            slot.isCanonical ? UUIDFormatting.parse(UnsafeBufferPointer(rebasing: value.dropFirst().dropLast())) : nil
        } ?? UUIDFormatting.parse(string(at: i))
    }

    /// The strings of STRING_LIST field `i`.
    func stringList(at i: Int) -> [String] {
        withValueText(at: i) { slot, _, text in
            var scanner = JSONScanner(UnsafeRawBufferPointer(text))
            scanner.position = Int(slot.valueStart)
            var list: [String] = []
            do {
                guard try scanner.enterArray("a list") else { return list }
                list.reserveCapacity(4)
                repeat {
                    list.append(try scanner.readString())
                } while try scanner.nextElement()
            } catch {
                preconditionFailure("Internal inconsistency: a kept STRING_LIST does not read back: \(error)")
            }
            return list
        }
    }

    /// Appends the decoded bytes of BYTES field `i` to `bytes`.
    func appendBytes(at i: Int, to bytes: inout [UInt8]) {
        withValueText(at: i) { _, value, _ in
            guard Base64.decode(UnsafeBufferPointer(rebasing: value.dropFirst().dropLast()), appendingTo: &bytes)
            else {
                preconditionFailure("Internal inconsistency: a kept BYTES value is not base64")
            }
        }
    }
}
