import CloudCodable
import CloudProtocol
import Hummingbird

extension Request {
    /// The body, at most `limit` bytes.
    ///
    /// - Throws: ``HTTPFailure`` (413) once the body passes `limit`.
    func collectBody(upTo limit: Int) async throws -> [UInt8] {
        // Straight into the array the decoder takes: collecting a ByteBuffer
        // and copying it out held each body twice at its peak.
        var bytes: [UInt8] = []
        if let declared = headers[.contentLength].flatMap({ Int($0) }), declared <= limit {
            bytes.reserveCapacity(declared)
        }
        for try await buffer in body {
            guard bytes.count + buffer.readableBytes <= limit else { throw Self.tooLarge(limit: limit) }
            bytes.append(contentsOf: buffer.readableBytesView)
        }
        return bytes
    }

    /// The answer to a body over `limit` bytes.
    static func tooLarge(limit: Int) -> HTTPFailure {
        HTTPFailure(
            CloudError(.badRequest, reason: "The request body is larger than the limit of \(limit) bytes."),
            status: 413)
    }
}
