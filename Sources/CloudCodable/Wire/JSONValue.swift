/// A JSON document as a tree, as ``JSONParser`` reads it.
///
/// Numbers keep their literal text, so no precision is lost and the caller
/// decides how to read them; objects keep their members in document order,
/// duplicates included.
///
/// ```swift
/// let value = try JSONParser.parse(Array(#"{"n": 1.50}"#.utf8))
/// // .object([JSONMember(key: "n", value: .number("1.50"))])
/// ```
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, as its literal text exactly as written (for example `"-1.50e3"`).
    case number(String)
    /// A string, unescaped.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object: its members in document order, duplicate keys kept as written.
    case object([JSONMember])
}

/// One member of a JSON object: a key and its value.
public struct JSONMember: Sendable, Hashable {
    /// The member's key, unescaped.
    public var key: String
    /// The member's value.
    public var value: JSONValue

    /// Creates a member.
    public init(key: String, value: JSONValue) {
        self.key = key
        self.value = value
    }
}
