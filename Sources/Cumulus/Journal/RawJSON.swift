import Foundation

/// Just enough of a JSON reader for the journal: walks one object per line
/// and hands back each value as the bytes it was written with, without
/// building it. The values are records and small documents that their
/// owners parse when they need them.
struct RawJSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int
    let end: Int

    struct Failure: Error {
        var offset: Int
        var message: String
    }

    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) {
        self.bytes = bytes
        position = start
        self.end = end
    }

    mutating func skipWhitespace() {
        while position < end {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func expect(_ byte: UInt8) throws {
        skipWhitespace()
        guard position < end, bytes[position] == byte else {
            throw Failure(offset: position, message: "expected '\(Character(UnicodeScalar(byte)))'")
        }
        position += 1
    }

    /// Whether the next byte is `byte`, consuming it if so.
    mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        if position < end, bytes[position] == byte {
            position += 1
            return true
        }
        return false
    }

    var isAtEnd: Bool {
        mutating get {
            skipWhitespace()
            return position >= end
        }
    }

    /// Reads a string and returns its contents, unescaped.
    mutating func readString() throws -> String {
        skipWhitespace()
        let start = position
        try skipString()
        // Re-read through the full parser only when there are escapes.
        let inner = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<(position - 1)])
        if !inner.contains(UInt8(ascii: "\\")) {
            guard let text = String(validating: inner, as: UTF8.self) else {
                throw Failure(offset: start, message: "invalid UTF-8 in a string")
            }
            return text
        }
        let quoted = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        guard case .string(let text) = try? JSONParser.parse(quoted)
        else {
            throw Failure(offset: start, message: "invalid string")
        }
        return text
    }

    /// Skips one value of any kind and returns the range it took.
    mutating func skipValue() throws -> Range<Int> {
        skipWhitespace()
        let start = position
        guard position < end else { throw Failure(offset: position, message: "expected a value") }
        var depth = 0
        repeat {
            skipWhitespace()
            guard position < end else { throw Failure(offset: position, message: "unterminated value") }
            switch bytes[position] {
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                position += 1
                if depth > 512 { throw Failure(offset: position, message: "nesting too deep") }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { throw Failure(offset: position, message: "unbalanced bracket") }
                depth -= 1
                position += 1
            case UInt8(ascii: ","), UInt8(ascii: ":"):
                guard depth > 0 else { throw Failure(offset: position, message: "unexpected separator") }
                position += 1
            default:
                // A number or a literal: runs until a delimiter.
                let scalarStart = position
                while position < end {
                    let c = bytes[position]
                    if c == UInt8(ascii: ",") || c == UInt8(ascii: "}") || c == UInt8(ascii: "]") || c == 0x20
                        || c == 0x0A || c == 0x0D || c == 0x09 || c == UInt8(ascii: ":")
                    {
                        break
                    }
                    position += 1
                }
                if position == scalarStart { throw Failure(offset: position, message: "unexpected byte") }
            }
        } while depth > 0
        return start..<position
    }

    private mutating func skipString() throws {
        guard position < end, bytes[position] == UInt8(ascii: "\"") else {
            throw Failure(offset: position, message: "expected a string")
        }
        position += 1
        while position < end {
            let c = bytes[position]
            if c == UInt8(ascii: "\"") {
                position += 1
                return
            }
            if c == UInt8(ascii: "\\") { position += 1 }
            position += 1
        }
        throw Failure(offset: position, message: "unterminated string")
    }
}
