/// The account's status as an engine knows it, from the moment
/// ``SyncEngine/accountStatus`` was read: each read is a subscriber of its
/// own, which first gets the latest known status at once
/// (``AccountStatus/couldNotDetermine`` until the engine has checked the
/// account), then every change of it.
///
/// ```swift
/// for await status in engine.accountStatus {
///     showSignInPrompt(status == .noAccount)
/// }
/// ```
///
/// Only the current status matters, so only the newest one waits for a
/// reader: a reader that is behind skips the statuses in between and reads
/// the current one. The last status a reader gets before it waits is always
/// the engine's latest, also when the status changes while it subscribes.
///
/// The subscription ends when the loop ends (a `break`, a `return`, or the
/// iterator dropped), when the reading task is cancelled (its next call to
/// `next()` returns `nil`), or when the sequence is dropped without being
/// iterated. When the engine closes, iteration ends once the reader has read
/// what came before. Iterate a value once, in one task; read
/// ``SyncEngine/accountStatus`` again for another reader.
public struct AccountStatusUpdates: AsyncSequence, Sendable {
    /// What the sequence yields.
    public typealias Element = AccountStatus

    private let subscription: Broadcaster<Element>.Subscription

    init(_ subscription: Broadcaster<Element>.Subscription) { self.subscription = subscription }

    /// Makes the iterator; its subscription ends when it is dropped.
    public func makeAsyncIterator() -> Iterator { Iterator(subscription.makeAsyncIterator()) }

    /// Reads the statuses of one subscription.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: Broadcaster<Element>.Subscription.Iterator

        init(_ base: Broadcaster<Element>.Subscription.Iterator) { self.base = base }

        /// The current status if this reader has not read it yet, else the
        /// next one, waiting for it; `nil` once the subscription ended.
        public mutating func next() async -> Element? { await base.next() }

        /// The current status if this reader has not read it yet, else the
        /// next one, waiting for it on `actor`; `nil` once the subscription
        /// ended.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await base.next(isolation: actor)
        }
    }
}
