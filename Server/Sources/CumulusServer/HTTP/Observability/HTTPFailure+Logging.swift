import Foundation
import Logging

extension HTTPFailure {
    /// The failure with a `uuid` for its answer, kept if it has one.
    func identified() -> HTTPFailure {
        var failure = self
        if failure.error.uuid == nil { failure.error.uuid = UUID().uuidString }
        return failure
    }

    /// What each log line of the failed request carries: the error's code
    /// and the `uuid` the client finds in its answer.
    var logMetadata: Logger.Metadata {
        ["serverErrorCode": "\(error.code.rawValue)", "uuid": "\(error.uuid ?? "")"]
    }
}
