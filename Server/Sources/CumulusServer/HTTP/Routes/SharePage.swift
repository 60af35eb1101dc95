import CloudCodable
import CloudProtocol
import HTTPTypes
import Hummingbird
import NIOCore

/// The page at a share's URL (`GET /share/<shortGUID>`): the share's title
/// and owner for whoever holds the URL, and nothing else. An unknown
/// shortGUID answers 404 with a page that says no more than that.
enum SharePage {
    /// The page of a share, everything from the share HTML-escaped.
    static func html(_ preview: SharePreview) -> String {
        let title = preview.title.flatMap { $0.isEmpty ? nil : $0 } ?? "A shared item"
        return page(
            title: title,
            body: "<h1>\(escaped(title))</h1>\n<p>Shared by \(escaped(ownerName(preview.owner)))</p>")
    }

    /// The page of a shortGUID that names no share.
    static let notFound = page(
        title: "Not found", body: "<h1>Not found</h1>\n<p>There is no share at this address.</p>")

    /// The owner's name when the server knows it, else the user record name.
    static func ownerName(_ owner: UserIdentity) -> String {
        let parts = [owner.nameComponents?.givenName, owner.nameComponents?.familyName].compactMap { part in
            part.flatMap { $0.isEmpty ? nil : $0 }
        }
        return parts.isEmpty ? owner.userRecordName : parts.joined(separator: " ")
    }

    /// `text` safe inside an element or a quoted attribute.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            // U+0000 is not allowed in HTML text.
            case "\u{0}": result += "\u{FFFD}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The answer: no caching and no referrer, since the URL is the share's
    /// handle, and nothing the page may load or run.
    static func response(status: HTTPResponse.Status, html: String) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: "default-src 'none'", HTTPField.Name("Referrer-Policy")!: "no-referrer",
                HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    private static func page(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html>
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="robots" content="noindex">
        <title>\(escaped(title))</title>
        </head>
        <body>
        \(body)
        </body>
        </html>

        """
    }
}
