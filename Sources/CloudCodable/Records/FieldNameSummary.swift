/// A 256-bit summary of a set of field names: one bit for each name, chosen
/// by a hash of its length and of the bytes at its ends. A name whose bit is clear is certainly not in
/// the set, so the writers and readers that add fields one by one find out
/// that a name is new without comparing it with the others; only a name
/// given twice, or one whose bit another name took, is compared.
///
/// (Records have a handful to a few dozen fields: with 40 names a new name
/// meets a taken bit about one time in twelve on average.)
struct FieldNameSummary {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// An empty summary.
    init() {}

    /// The bit of the name whose UTF-8 bytes are `name` (0–255), from its
    /// length and its first two and last two bytes, mixed so that every
    /// one of them moves the bit: O(1) whatever the length. (Names that
    /// differ only in the middle share a bit and are compared.)
    @inline(__always)
    static func bit(of name: UnsafeBufferPointer<UInt8>) -> Int {
        let count = name.count
        var key = UInt64(truncatingIfNeeded: count)
        if count > 0 {
            let first = UInt64(name[0]) << 8 | UInt64(name[count > 1 ? 1 : 0])
            let last = UInt64(name[count > 1 ? count &- 2 : 0]) << 8 | UInt64(name[count &- 1])
            key |= first << 16 | last << 32
        }
        key &*= 0x9E37_79B9_7F4A_7C15
        key ^= key >> 29
        key &*= 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: key >> 56)
    }

    /// The bit of `name`.
    @inline(__always)
    static func bit(of name: String) -> Int {
        if let bit = name.utf8.withContiguousStorageIfAvailable(bit(of:)) { return bit }
        var copy = name
        return copy.withUTF8(bit(of:))
    }

    /// Whether `bit` is set: whether a name with that bit may be in the set.
    @inline(__always)
    func contains(_ bit: Int) -> Bool {
        word(bit >> 6) & (1 << UInt64(truncatingIfNeeded: bit & 63)) != 0
    }

    /// Sets `bit`, for a name added to the set.
    @inline(__always)
    mutating func insert(_ bit: Int) {
        let mask: UInt64 = 1 << UInt64(truncatingIfNeeded: bit & 63)
        switch bit >> 6 {
        case 0: words.0 |= mask
        case 1: words.1 |= mask
        case 2: words.2 |= mask
        default: words.3 |= mask
        }
    }

    @inline(__always)
    private func word(_ index: Int) -> UInt64 {
        switch index {
        case 0: words.0
        case 1: words.1
        case 2: words.2
        default: words.3
        }
    }
}
