import CloudCodable
import Foundation

/// Field values as the console shows them, and the values an operator may
/// type in their place.
enum ConsoleValues {
    /// The value in words: text as it is, numbers, dates in ISO 8601,
    /// bytes by their count, references by record name, lists one element
    /// a line.
    static func text(_ value: FieldValue) -> String {
        switch value {
        case .string(let text): text
        case .int64(let number): String(number)
        case .double(let number): String(number)
        case .timestamp(let date): date.ISO8601Format()
        case .bytes(let data): "\(data.count) bytes"
        case .reference(let reference): reference.recordName
        case .asset(let asset): "asset of \(asset.size.map(String.init) ?? "?") bytes"
        case .location(let location): "\(location.latitude), \(location.longitude)"
        case .stringList(let list): list.joined(separator: "\n")
        case .int64List(let list): list.map(String.init).joined(separator: "\n")
        case .doubleList(let list): list.map { String($0) }.joined(separator: "\n")
        case .timestampList(let list): list.map { $0.ISO8601Format() }.joined(separator: "\n")
        case .bytesList(let list): list.map { "\($0.count) bytes" }.joined(separator: "\n")
        case .referenceList(let list): list.map(\.recordName).joined(separator: "\n")
        case .assetList(let list): "\(list.count) assets"
        case .locationList(let list): list.map { "\($0.latitude), \($0.longitude)" }.joined(separator: "\n")
        }
    }

    /// Whether the console edits the field: a string, an int64 or a double.
    static func isEditable(_ value: FieldValue) -> Bool {
        switch value {
        case .string, .int64, .double: true
        default: false
        }
    }

    /// `text` as a browser posted it from a text area (every line break
    /// CRLF) with the line breaks `current` had: a text without CRLFs keeps
    /// LFs, so an edit changes only what the operator changed.
    static func lineBreaks(of text: String, as current: FieldValue) -> String {
        guard case .string(let old) = current, !old.utf8.contains(13) else { return text }
        return text.replacingOccurrences(of: "\r\n", with: "\n")
    }

    /// The value `text` stands for in a field of `current`'s type; `nil`
    /// when it is not one (a number that does not parse, or overflows).
    static func value(_ text: String, like current: FieldValue) -> FieldValue? {
        switch current {
        case .string: return .string(text)
        case .int64: return Int64(text.trimmingCharacters(in: .whitespaces)).map(FieldValue.int64)
        case .double:
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite else { return nil }
            return .double(number)
        default: return nil
        }
    }
}
