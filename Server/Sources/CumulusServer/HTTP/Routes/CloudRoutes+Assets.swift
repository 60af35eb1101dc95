import CloudCodable
import CloudProtocol
import HTTPTypes
import Hummingbird
import NIOCore

/// The asset URLs: the upload URL that `assets/upload` answers and the
/// download URL of a returned record. The URL is the credential, so neither
/// asks for a token; the ticket and the token are secret route parameters.
extension CloudRoutes {
    func addAssetRoutes<Context: Hummingbird.RequestContext>(to router: Router<Context>) {
        router.post("/assets/1/upload/:ticket") { request, context in
            try await self.upload(request, ticket: context.parameters.get("ticket") ?? "")
        }
        // `**`: the file name that stands for `${f}` is the client's to pick, slashes included.
        router.get("/assets/1/download/:token/**") { request, context in
            try await self.download(request, token: context.parameters.get("token") ?? "")
        }
    }

    /// The upload URL: the raw body streams into the record service, which
    /// stores it as it arrives, counting it against the asset size limit
    /// (the JSON body limit is not for assets). A `Content-Length` over the
    /// limit is refused before a byte is read.
    func upload(_ request: Request, ticket: String) async throws -> Response {
        var declared: Int64?
        if let text = request.headers[.contentLength] {
            guard let length = Int64(text), length >= 0 else {
                throw HTTPFailure(.badRequest, "The Content-Length is not a length.")
            }
            declared = length
        }
        do {
            let asset = try await service.receiveAsset(
                ticket: ticket, contentLength: declared, chunks: request.body.map { Array($0.readableBytesView) })
            return Self.json(asset.singleFileBody())
        } catch let error as CloudError {
            // What is left of the body is not read: the connection closes after the answer.
            throw HTTPFailure(error, closesConnection: true)
        }
    }

    /// The download URL: the asset's bytes, streamed as they are read, or
    /// the part a `Range` header asks for (206, up to the end for a range
    /// that runs past it), or 416 for a range that holds none of it.
    func download(_ request: Request, token: String) async throws -> Response {
        var headers: HTTPFields = [
            .contentType: "application/octet-stream", .acceptRanges: "bytes",
            // The URL is a credential: no shared cache keeps what it opens.
            .cacheControl: "private, no-store",
        ]
        let header = request.headers[.range]
        var partial = false
        let download = try await service.openAssetDownload(token: token) { size in
            switch ByteRange(header: header, size: size) {
            case .whole:
                return nil
            case .part(let range):
                partial = true
                return range
            case .unsatisfiable:
                throw HTTPFailure(
                    CloudError(.rangeNotSatisfiable, reason: "The range is not inside the asset's \(size) bytes."),
                    headers: [.contentRange: "bytes */\(size)"])
            }
        }
        let status: HTTPResponse.Status = partial ? .partialContent : .ok
        if partial {
            headers[.contentRange] =
                "bytes \(download.range.lowerBound)-\(download.range.upperBound - 1)/\(download.assetSize)"
        }
        let length = Int(download.range.upperBound - download.range.lowerBound)
        headers[.contentLength] = String(length)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: length) { writer in
                for try await chunk in download { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }
}
