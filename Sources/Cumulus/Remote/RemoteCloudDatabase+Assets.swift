import CloudCodable
import CloudProtocol
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension RemoteCloudDatabase {
    /// Sends the file to the target's upload URL, streamed from disk. The
    /// URL is the credential: no token goes with it.
    public func uploadAsset(contentsOf file: URL, to target: AssetUploadTarget) async throws -> Asset {
        let request = CloudHTTPRequest(
            method: "POST", url: try session.assetURL(target.url),
            headers: ["Accept": "application/json", "Content-Type": "application/octet-stream"],
            timeout: configuration.requestTimeout)
        let response: CloudHTTPResponse
        do {
            response = try await session.transport.upload(request, fromFile: file)
        } catch let error as CloudError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile || error.code == .fileNoSuchFile {
            throw CloudError(.badRequest, reason: "the asset's file does not exist")
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw CloudError(.networkFailure, reason: "the upload failed (\(type(of: error)))")
        }
        guard (200..<300).contains(response.status) else {
            throw RemoteSession.error(for: response, now: session.now())
        }
        return try withCloudErrors(.internalError, "the server's answer to an asset upload is not valid") {
            try WireBodyReader.read(response.body) { reader in
                let asset = try reader.readSingleFile("the answer")
                try reader.expectEnd()
                return asset
            }
        }
    }

    /// Reads the asset from its download URL, a chunk at a time as the
    /// bytes arrive, with a `Range` header for `range`. The URL is the
    /// credential: no token goes with it.
    ///
    /// More bytes than the configuration's
    /// ``Configuration/downloadWindow`` come in ranged requests of that
    /// size, the next sent when the reader starts on the one before: memory
    /// stays bounded however slowly the download is read. A server that
    /// ignores `Range` sends the whole asset in one answer instead.
    public func downloadAsset(_ asset: Asset, range: Range<Int64>?) async throws -> AssetDownload {
        guard let address = asset.downloadURL else {
            throw CloudError(.badRequest, reason: "the asset has no download URL; fetch its record first")
        }
        if let range, range.lowerBound < 0 || range.isEmpty {
            throw CloudError(.rangeNotSatisfiable, reason: "the range \(range) holds no byte of an asset")
        }
        // `${f}` stands for a file name the client picks.
        let url = try session.assetURL(address.replacingOccurrences(of: "${f}", with: "asset"))
        let window = max(1, configuration.downloadWindow)
        guard let wanted = range ?? asset.size.map({ 0..<$0 }), wanted.count > window else {
            let response = try await openDownload(url, range: range)
            let (bytes, size) = try Self.extent(of: response, asked: range)
            return AssetDownload(assetSize: size, range: bytes, chunks: response.body)
        }
        let first = wanted.lowerBound..<(wanted.lowerBound + window)
        let response = try await openDownload(url, range: first)
        guard response.status == 206 else {
            // The whole asset, from a server that ignores `Range`: refused when a range was asked.
            let (bytes, size) = try Self.extent(of: response, asked: range)
            return AssetDownload(assetSize: size, range: bytes, chunks: response.body)
        }
        let (_, size) = try Self.extent(of: response, asked: first)
        let whole = range ?? 0..<size
        guard whole.upperBound <= size else {
            throw CloudError(.rangeNotSatisfiable, reason: "the range \(whole) runs past the asset's \(size) bytes")
        }
        let chunks = WindowedDownload(
            first: response.body, firstCount: Int64(first.count), range: whole, size: size, window: window
        ) { part in
            let response = try await self.openDownload(url, range: part)
            guard response.status == 206, try Self.extent(of: response, asked: part) == (part, size) else {
                throw CloudError(
                    .internalError, reason: "the server's answer to a ranged download changed between its parts")
            }
            return response.body
        }
        return AssetDownload(assetSize: size, range: whole, chunks: chunks)
    }

    /// Sends the GET of a download URL, with a `Range` header for `range`,
    /// and throws the server's error for an answer that is not a success.
    private func openDownload(_ url: URL, range: Range<Int64>?) async throws -> CloudHTTPStreamedResponse {
        var headers = ["Accept": "*/*"]
        if let range { headers["Range"] = "bytes=\(range.lowerBound)-\(range.upperBound - 1)" }
        let request = CloudHTTPRequest(method: "GET", url: url, headers: headers, timeout: configuration.requestTimeout)
        let response: CloudHTTPStreamedResponse
        do {
            response = try await session.transport.stream(request)
        } catch let error as CloudError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw CloudError(.networkFailure, reason: "the download failed (\(type(of: error)))")
        }
        guard (200..<300).contains(response.status) else {
            // An error answer is a small dictionary: read it whole.
            var body: [UInt8] = []
            for try await chunk in response.body where body.count < 65_536 { body += chunk }
            throw RemoteSession.error(
                for: CloudHTTPResponse(status: response.status, headers: response.headers, body: body),
                now: session.now())
        }
        return response
    }

    /// The bytes an answer carries and the asset's size: `Content-Range`
    /// of a 206, `Content-Length` of a 200.
    static func extent(of response: CloudHTTPStreamedResponse, asked range: Range<Int64>?) throws
        -> (Range<Int64>, Int64)
    {
        func invalid(_ what: String) -> CloudError {
            CloudError(.internalError, reason: "the server's answer to an asset download is not valid: \(what)")
        }
        if response.status == 206 {
            // `bytes <first>-<last>/<size>`
            guard let header = response.header("Content-Range"), header.hasPrefix("bytes ") else {
                throw invalid("a partial answer without Content-Range")
            }
            let parts = header.dropFirst(6).split(separator: "/")
            let bounds = parts.first?.split(separator: "-") ?? []
            guard parts.count == 2, bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
                let size = Int64(parts[1]), first <= last, last < size
            else { throw invalid("Content-Range '\(header)'") }
            let bytes = first..<(last + 1)
            if let range, range.lowerBound == first, range.upperBound > size, bytes.upperBound == size {
                // The server served a range that runs past the end up to the end
                // (RFC 9110); a range of an asset lies inside it, as everywhere else.
                throw CloudError(
                    .rangeNotSatisfiable, reason: "the range \(range) runs past the asset's \(size) bytes")
            }
            guard range == nil || range == bytes else { throw invalid("another range than the one asked") }
            return (bytes, size)
        }
        guard let size = response.header("Content-Length").flatMap({ Int64($0) }), size >= 0 else {
            throw invalid("a whole answer without Content-Length")
        }
        // A server that ignores `Range` answers the whole asset: the range asked is not what comes.
        if let range, range != 0..<size { throw invalid("the whole asset where a range was asked") }
        return (0..<size, size)
    }
}

extension RemoteSession {
    /// An asset URL the server answered: absolute, or a path on the
    /// database's server. Only HTTP and HTTPS.
    func assetURL(_ address: String) throws -> URL {
        var address = address
        if address.hasPrefix("/") { address = origin(of: configuration.baseURL) + address }
        guard let url = URL(string: address), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { throw CloudError(.badRequest, reason: "the asset's URL is not an HTTP URL") }
        return url
    }
}
