import Cumulus
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The asset URLs spoken as any HTTP client would: the bytes POSTed raw to
/// an upload URL, a download URL fetched with a plain GET.
enum AssetHTTP {
    /// An answer: its status, headers (names in lower case) and body.
    struct Answer: Sendable {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]

        /// The body as a JSON object, or an empty one.
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }

        var serverErrorCode: String? { json["serverErrorCode"] as? String }

        /// The asset of an upload URL's answer, `{singleFile: {fileChecksum, size, receipt}}`.
        var uploadedAsset: Asset? {
            guard let file = json["singleFile"] as? [String: Any], let receipt = file["receipt"] as? String,
                let checksum = file["fileChecksum"] as? String, let size = file["size"] as? NSNumber
            else { return nil }
            return Asset(fileChecksum: checksum, size: size.int64Value, receipt: receipt)
        }
    }

    /// An asset URL as a record or `assets/upload` gives it (absolute, or a
    /// path) sent to the server at `base`, so that a test chooses which of
    /// several servers it reaches; its `${f}` replaced by a file name.
    static func url(_ text: String, on base: URL, fileName: String = "file.bin") -> URL {
        var path = text.replacingOccurrences(of: "${f}", with: fileName)
        if !path.hasPrefix("/"), let scheme = path.range(of: "://"),
            let slash = path[scheme.upperBound...].firstIndex(of: "/")
        {
            path = String(path[slash...])
        }
        return URL(string: base.absoluteString + path)!
    }

    /// POSTs `bytes` to an upload URL.
    static func upload(_ bytes: [UInt8], to target: String, on base: URL) async throws -> Answer {
        var request = URLRequest(url: url(target, on: base))
        request.httpMethod = "POST"
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let (data, response) = try await URLSession.shared.upload(for: request, from: Data(bytes))
        return answer(data, response)
    }

    /// GETs a download URL, with `fileName` for its `${f}` and a `Range` header if given.
    static func download(_ downloadURL: String, on base: URL, range: String? = nil, fileName: String = "file.bin")
        async throws -> Answer
    {
        var request = URLRequest(url: url(downloadURL, on: base, fileName: fileName))
        if let range { request.setValue(range, forHTTPHeaderField: "Range") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return answer(data, response)
    }

    private static func answer(_ data: Data, _ response: URLResponse) -> Answer {
        let http = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return Answer(status: http.statusCode, headers: headers, body: Array(data))
    }

    /// `count` bytes that differ from one asset to the next.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Asks `database` for an upload URL for the `image` field of a `Photo`
    /// named `recordName`, uploads `bytes` to it on `base`, and saves the
    /// record with the asset; answers the saved record.
    static func savePhoto(
        _ recordName: String, bytes: [UInt8], in database: any CloudDatabase, zoneID: ZoneID = .defaultZone,
        on base: URL
    ) async throws -> Record {
        let targets = try await database.requestAssetUploads(
            [AssetUploadRequest(recordName: recordName, recordType: "Photo", fieldName: "image")], zoneID: zoneID)
        guard let target = targets.first, targets.count == 1 else {
            throw CloudError(.internalError, reason: "assets/upload answered \(targets)")
        }
        let uploaded = try await upload(bytes, to: target.url, on: base)
        guard uploaded.status == 200, let asset = uploaded.uploadedAsset else {
            throw CloudError(
                .internalError,
                reason: "the upload answered \(uploaded.status): \(String(decoding: uploaded.body, as: UTF8.self))")
        }
        let record = Record(
            recordType: "Photo", recordName: recordName, zoneID: zoneID, fields: ["image": .asset(asset)])
        let results = try await database.modifyRecords([RecordOperation(.create, record)], zoneID: zoneID, atomic: true)
        guard let saved = results.first?.record else {
            throw CloudError(.internalError, reason: "the save answered \(results)")
        }
        return saved
    }

    /// The download URL of the `image` asset of a record.
    static func downloadURL(of record: Record?) -> String? {
        guard case .asset(let asset) = record?["image"] else { return nil }
        return asset.downloadURL
    }
}

/// The system's wall clock, which a test moves forward by hand.
final class TestWallClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: @Sendable () -> Date { { Date().addingTimeInterval(self.offset.withLock { $0 }) } }

    func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}
