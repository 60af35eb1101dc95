import Foundation

/// A strict RFC 8259 JSON parser that builds a ``JSONValue`` tree.
///
/// It accepts exactly JSON: no trailing commas, no comments, no leading
/// zeros, no `NaN` or infinities, no single quotes; whitespace is allowed
/// around the top-level value and nothing may follow it. Strings must be
/// valid UTF-8 and may not escape lone surrogates. Arrays and objects may
/// nest 512 deep; deeper input is an error, never a stack overflow (the
/// parser does not recurse). Every failure is a ``WireFormatError`` with the
/// byte offset where it was found.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"[1, "two", null]"#.utf8))
/// // .array([.number("1"), .string("two"), .null])
/// ```
///
/// The record wire form does not go through this tree: ``WireFormat`` reads
/// records directly from the bytes, which is much faster.
public enum JSONParser {
    /// The deepest nesting of arrays and objects the parser accepts.
    public static var maximumDepth: Int { JSONScanner.maximumDepth }

    /// Parses a JSON document held as UTF-8 bytes.
    ///
    /// - Throws: ``WireFormatError``.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBytes { buffer in try parseDocument(buffer) }
    }

    /// Parses a JSON document held as UTF-8 bytes.
    public static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { buffer in try parseDocument(buffer) }
    }

    /// Parses a JSON document held as UTF-8 bytes.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> JSONValue {
        try parseDocument(bytes)
    }

    /// The typed-throws parser behind the public entry points (which throw
    /// untyped errors; see ``WireFormat``).
    static func parseDocument(_ bytes: UnsafeRawBufferPointer) throws(WireFormatError) -> JSONValue {
        var scanner = JSONScanner(bytes)
        let value = try parseValue(&scanner)
        try scanner.expectEnd()
        return value
    }

    /// An array or object being filled.
    private struct Frame {
        var isObject: Bool
        var elements: [JSONValue] = []
        var members: [JSONMember] = []
        var key = ""
    }

    /// Parses one value at the cursor, with an explicit stack of open containers.
    private static func parseValue(_ scanner: inout JSONScanner) throws(WireFormatError) -> JSONValue {
        var stack: [Frame] = []
        while true {
            // At the start of a value.
            var value: JSONValue
            switch try scanner.peek("a value") {
            case UInt8(ascii: "{"):
                guard stack.count < maximumDepth else {
                    throw scanner.error(.nestingTooDeep, "arrays and objects nested deeper than \(maximumDepth)")
                }
                if try scanner.enterObject("an object") {
                    var frame = Frame(isObject: true)
                    frame.key = try scanner.string(scanner.memberKey())
                    stack.append(frame)
                    continue
                }
                value = .object([])
            case UInt8(ascii: "["):
                guard stack.count < maximumDepth else {
                    throw scanner.error(.nestingTooDeep, "arrays and objects nested deeper than \(maximumDepth)")
                }
                if try scanner.enterArray("an array") {
                    stack.append(Frame(isObject: false))
                    continue
                }
                value = .array([])
            case JSONText.quote:
                value = .string(try scanner.string(scanner.scanString()))
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = .number(scanner.text(try scanner.scanNumber()))
            case UInt8(ascii: "t"):
                try scanner.scanLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try scanner.scanLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try scanner.scanLiteral("null")
                value = .null
            case let byte:
                throw scanner.error(.malformedJSON, "expected a value, found \(JSONScanner.describe(byte))")
            }
            // After a value: add it to its container, closing containers
            // until one continues.
            while true {
                guard !stack.isEmpty else { return value }
                let top = stack.count - 1
                if stack[top].isObject {
                    stack[top].members.append(JSONMember(key: stack[top].key, value: value))
                    if try scanner.nextMember() {
                        stack[top].key = try scanner.string(scanner.memberKey())
                        break
                    }
                    value = .object(stack.removeLast().members)
                } else {
                    stack[top].elements.append(value)
                    if try scanner.nextElement() { break }
                    value = .array(stack.removeLast().elements)
                }
            }
        }
    }
}
