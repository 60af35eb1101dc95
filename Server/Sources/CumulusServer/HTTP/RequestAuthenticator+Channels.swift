import CloudCodable
import CloudProtocol
import Foundation
import Hummingbird

extension RequestAuthenticator {
    /// The credential a request that was just authenticated carries, as a
    /// notification channel keeps it (``ChannelCredential``): a signed
    /// request's key, an identity token's issuer and subject (read from the
    /// token, whose signature the authentication checked), or the hash of
    /// a web auth token.
    static func channelCredential(of request: Request) throws -> ChannelCredential? {
        if isSigned(request) {
            return request.headers[keyIDHeader].map { .serverKey(id: $0) }
        }
        if let token = try identityToken(of: request) {
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let payload = Self.base64URLDecoded(parts[1]),
                let claims = try? JSONDecoder().decode(IssuerAndSubject.self, from: payload)
            else { return nil }
            return .identity(issuer: claims.iss, subject: claims.sub)
        }
        guard let webAuthToken = request.uri.queryParameters["ckWebAuthToken"], !webAuthToken.isEmpty else {
            return nil
        }
        return .webAuthToken(hash: ServerSecrets.sha256Hex(String(webAuthToken)))
    }

    private struct IssuerAndSubject: Decodable {
        var iss: String
        var sub: String
    }

    private static func base64URLDecoded(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
