import Foundation

/// A text cut into tokens: byte ranges of its UTF-8, each with an id that
/// is the same for tokens of the same bytes (across the texts that share an
/// ``TokenInterner``). Tokens end only at ASCII bytes, so every run of them
/// is valid UTF-8.
struct TextTokens {
    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var ranges: [Range<Int>] = []
    private(set) var ids: [Int] = []

    /// How tokens are cut.
    enum Unit {
        /// Lines, each with the line feed that ends it (the last may have none).
        case lines
        /// Runs of ASCII whitespace and runs of everything else, so that the
        /// spacing between words is a token of its own.
        case words
    }

    /// The tokens of `bytes[range]`.
    init(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, by unit: Unit, interner: inout TokenInterner) {
        self.bytes = bytes
        var start = range.lowerBound
        var index = range.lowerBound
        switch unit {
        case .lines:
            while index < range.upperBound {
                index += 1
                if bytes[index - 1] == UInt8(ascii: "\n") {
                    append(start..<index, &interner)
                    start = index
                }
            }
        case .words:
            while index < range.upperBound {
                let spacing = Self.isWhitespace(bytes[index])
                index += 1
                while index < range.upperBound, Self.isWhitespace(bytes[index]) == spacing { index += 1 }
                append(start..<index, &interner)
                start = index
            }
        }
        if start < range.upperBound { append(start..<range.upperBound, &interner) }
    }

    private mutating func append(_ range: Range<Int>, _ interner: inout TokenInterner) {
        ranges.append(range)
        ids.append(interner.id(of: UnsafeBufferPointer(rebasing: bytes[range])))
    }

    var count: Int { ranges.count }

    /// The byte range of the tokens `tokens` (empty for none).
    func byteRange(of tokens: Range<Int>) -> Range<Int> {
        guard !tokens.isEmpty else { return 0..<0 }
        return ranges[tokens.lowerBound].lowerBound..<ranges[tokens.upperBound - 1].upperBound
    }

    /// Space, tab, line feed, vertical tab, form feed and carriage return.
    /// Other whitespace (a no-break space, say) is part of a word.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }
}

/// Gives each distinct byte string one small integer, so that a diff
/// compares tokens as integers.
struct TokenInterner {
    /// A byte string by address; valid while the texts are.
    private struct Key: Hashable {
        let bytes: UnsafeBufferPointer<UInt8>

        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.bytes.count == rhs.bytes.count
                && (lhs.bytes.count == 0
                    || memcmp(lhs.bytes.baseAddress!, rhs.bytes.baseAddress!, lhs.bytes.count) == 0)
        }
    }

    private var ids: [Key: Int] = [:]

    /// The id of `bytes`: a new one the first time these bytes are seen.
    mutating func id(of bytes: UnsafeBufferPointer<UInt8>) -> Int {
        let key = Key(bytes: bytes)
        if let id = ids[key] { return id }
        let id = ids.count
        ids[key] = id
        return id
    }
}
