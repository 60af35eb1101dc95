import Cumulus
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Fetches an issuer's key set (JWKS) from its URL.
struct KeySetFetcher: Sendable {
    /// The longest a fetch may take.
    let timeout: Duration
    /// The largest document accepted, in bytes.
    let maximumSize: Int

    /// The document at `address`. Throws ``CloudError`` for an answer that
    /// is not a 200 with at most ``maximumSize`` bytes of UTF-8, and
    /// whatever `URLSession` throws when the address cannot be reached.
    func fetch(_ address: String) async throws -> String {
        guard let url = URL(string: address) else {
            throw CloudError(.badRequest, reason: "the key set URL is not a URL")
        }
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
            let status = (response as? HTTPURLResponse).map { " \($0.statusCode)" } ?? ""
            throw CloudError(.internalError, reason: "the key set URL answered\(status), not 200")
        }
        guard data.count <= maximumSize else {
            throw CloudError(.internalError, reason: "the key set is larger than \(maximumSize) bytes")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CloudError(.internalError, reason: "the key set is not UTF-8")
        }
        return text
    }
}
