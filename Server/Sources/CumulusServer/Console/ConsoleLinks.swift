import Foundation

/// Console URLs and forms: every name goes in a query parameter,
/// percent-encoded whole, so no name can change a link's path or add a
/// parameter; forms and queries are read back with one parser.
enum ConsoleLinks {
    /// The bytes a parameter keeps as they are: RFC 3986's unreserved ones.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `path` with `parameters` as its query, each name and value percent-encoded.
    static func link(_ path: String, _ parameters: [(String, String)]) -> String {
        guard !parameters.isEmpty else { return path }
        let query = parameters.map { "\(encoded($0.0))=\(encoded($0.1))" }.joined(separator: "&")
        return path + "?" + query
    }

    /// `text` with every byte but the unreserved ones percent-encoded.
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// The parameters of a query or an `application/x-www-form-urlencoded`
    /// body; a `+` is a space, a parameter that does not decode is left out,
    /// and the first of a repeated name wins.
    static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decoded(parts[0]) else { continue }
            let value = parts.count > 1 ? decoded(parts[1]) : ""
            guard let value, result[name] == nil else { continue }
            result[name] = value
        }
        return result
    }

    private static func decoded(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
