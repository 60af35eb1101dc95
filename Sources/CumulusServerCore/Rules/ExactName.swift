/// A name as the protocol's identity: its exact UTF-8 bytes.
///
/// Swift's `String ==` treats canonically equivalent strings as equal
/// (`"caf\u{E9}"` and `"cafe\u{301}"`), while every store compares bytes; a
/// map keyed by `String` would merge two names the stores keep apart. Every
/// map and comparison of record, zone, field, type, container, user and
/// subscription names goes through this type or ``Swift/String/isExactly(_:)``.
public struct ExactName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The name.
    public let string: String

    /// Wraps a name.
    public init(_ string: String) {
        self.string = string
    }

    /// Whether the two are the same, names compared byte for byte.
    public static func == (lhs: ExactName, rhs: ExactName) -> Bool {
        lhs.string.isExactly(rhs.string)
    }

    /// Hashes the names' bytes, so that equal values hash equally.
    public func hash(into hasher: inout Hasher) {
        var string = string
        string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(string.utf8.count)
    }

    /// Byte order: a total order that agrees with ``==``.
    public static func < (lhs: ExactName, rhs: ExactName) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }

    /// The text, for logs and messages.
    public var description: String { string }
}

extension String {
    /// Whether the two names are the same bytes (not merely canonically equivalent).
    public func isExactly(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        // Native strings compare as two buffers; the view's generic walk is several times slower.
        let buffers = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in mine.elementsEqual(theirs) }
        }
        if let same = buffers ?? nil { return same }
        return utf8.elementsEqual(other.utf8)
    }
}
