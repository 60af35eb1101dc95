import Cumulus

/// A failure the in-memory server answers a request with instead of (or
/// after) carrying it out.
///
/// Inject one with ``InMemoryCloudServer/inject(_:count:on:)`` (any handle's
/// requests) or ``InMemoryCloudDatabase/inject(_:count:on:)`` (one handle's):
///
/// ```swift
/// server.inject(.throttled(retryAfter: .seconds(30)), count: 2)
/// device.inject(.networkFailure(afterApplying: true), on: [.modifyRecords])
/// ```
public struct InjectedFault: Sendable, Hashable, CustomStringConvertible {
    /// The error the request throws.
    public var error: CloudError
    /// Whether the server carries the request out before the error is
    /// thrown: the write is applied but its answer is lost, so the client
    /// cannot tell it from a request that never arrived.
    public var afterApplying: Bool

    /// A fault that throws `error`, before the request is carried out or
    /// (with `afterApplying`) after.
    public init(error: CloudError, afterApplying: Bool = false) {
        self.error = error
        self.afterApplying = afterApplying
    }

    /// `THROTTLED`: too many requests; the client should wait `retryAfter`.
    public static func throttled(retryAfter: Duration) -> InjectedFault {
        InjectedFault(error: CloudError(.throttled, reason: "injected: too many requests", retryAfter: retryAfter))
    }

    /// `TRY_AGAIN_LATER`: the server is busy.
    public static func tryAgainLater(retryAfter: Duration? = nil) -> InjectedFault {
        InjectedFault(
            error: CloudError(.tryAgainLater, reason: "injected: the server is busy", retryAfter: retryAfter))
    }

    /// `INTERNAL_ERROR`: the server failed.
    public static func internalError(retryAfter: Duration? = nil) -> InjectedFault {
        InjectedFault(
            error: CloudError(.internalError, reason: "injected: the server failed", retryAfter: retryAfter))
    }

    /// `NETWORK_FAILURE`: the request never arrived, or (with
    /// `afterApplying`) it arrived and was carried out but the answer never
    /// came back: the classic lost acknowledgement.
    public static func networkFailure(afterApplying: Bool = false) -> InjectedFault {
        InjectedFault(
            error: CloudError(
                .networkFailure,
                reason: afterApplying
                    ? "injected: the connection was lost before the answer arrived"
                    : "injected: the connection was lost"),
            afterApplying: afterApplying)
    }

    /// The error, and whether it comes after the request is carried out.
    public var description: String {
        afterApplying ? "\(error) (after applying)" : "\(error)"
    }
}
