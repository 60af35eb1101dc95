/// An error reading or writing the JSON wire form of records.
///
/// Every error carries a ``code`` to compare against, the byte ``offset`` in
/// the input where reading failed (when there is an input), and a ``message``
/// that says what was being read:
///
/// ```swift
/// do {
///     let record = try WireFormat.decodeRecord(from: bytes)
/// } catch where error.code == .truncated {
///     // wait for more bytes
/// } catch {
///     print(error)  // "malformed JSON at byte 17: expected ':' after object key"
/// }
/// ```
public struct WireFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of error this is. New codes may be added; switch with a
    /// `default` case.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case malformedJSON, truncated, invalidUTF8, nestingTooDeep
            case missingKey, wrongType, unknownFieldType, invalidValue
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The input is not JSON (RFC 8259): an unexpected character, a
        /// trailing comma, a leading zero, text after the value.
        public static var malformedJSON: Self { Self(.malformedJSON) }
        /// The input ended in the middle of a value.
        public static var truncated: Self { Self(.truncated) }
        /// A string is not valid UTF-8, or escapes a lone UTF-16 surrogate:
        /// it cannot become a Swift `String`.
        public static var invalidUTF8: Self { Self(.invalidUTF8) }
        /// Arrays and objects are nested deeper than the reader allows (512).
        public static var nestingTooDeep: Self { Self(.nestingTooDeep) }
        /// A key that the record dictionary requires is absent.
        public static var missingKey: Self { Self(.missingKey) }
        /// A value has the wrong JSON type, for example a number where a
        /// string belongs.
        public static var wrongType: Self { Self(.wrongType) }
        /// A field's `type` is not one of the CloudKit field types, or it is
        /// absent and cannot be inferred from the value.
        public static var unknownFieldType: Self { Self(.unknownFieldType) }
        /// A value has the right JSON type but cannot be used: an integer out
        /// of range, bad base64, a non-finite double, an unknown enum string.
        public static var invalidValue: Self { Self(.invalidValue) }

        /// A short name of the code, for example `"malformed JSON"`.
        public var description: String {
            switch base {
            case .malformedJSON: "malformed JSON"
            case .truncated: "truncated JSON"
            case .invalidUTF8: "invalid UTF-8"
            case .nestingTooDeep: "nesting too deep"
            case .missingKey: "missing key"
            case .wrongType: "wrong type"
            case .unknownFieldType: "unknown field type"
            case .invalidValue: "invalid value"
            }
        }
    }

    /// What kind of error this is.
    public var code: Code
    /// The byte offset in the input where the problem was found, or `nil`
    /// when the error is not about an input (for example while writing).
    public var offset: Int?
    /// What went wrong and what was being read, for people.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, offset: Int? = nil, message: String) {
        self.code = code
        self.offset = offset
        self.message = message
    }

    /// The code, the offset and the message, for example
    /// `"malformed JSON at byte 17: expected ':' after object key"`.
    public var description: String {
        if let offset {
            return "\(code) at byte \(offset): \(message)"
        }
        return "\(code): \(message)"
    }
}
