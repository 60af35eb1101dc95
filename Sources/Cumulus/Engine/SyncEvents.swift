/// What an engine is doing, from the moment ``SyncEngine/events`` was read:
/// each read is a subscriber of its own.
///
/// ```swift
/// for await event in engine.events {
///     if case .recordFailed(let name, let error) = event { report(name, error) }
/// }
/// ```
///
/// Nothing is dropped: some events need the app (a record the server
/// refused, a record that does not decode), so the events a reader has not
/// asked for yet wait for it, however many, in the order they happened. A
/// subscriber that is kept but not read therefore holds every later event
/// in memory.
///
/// The subscription ends, and what it holds is released, when the loop ends
/// (a `break`, a `return`, or the iterator dropped), when the reading task is
/// cancelled (its next call to `next()` returns `nil`, even with events
/// waiting), or when the sequence is dropped without being iterated. When the
/// engine closes, iteration ends once the reader has read what came before.
/// Iterate a value once, in one task; read ``SyncEngine/events`` again for
/// another reader.
public struct SyncEvents: AsyncSequence, Sendable {
    /// What the sequence yields.
    public typealias Element = SyncEvent

    private let subscription: Broadcaster<Element>.Subscription

    init(_ subscription: Broadcaster<Element>.Subscription) { self.subscription = subscription }

    /// Makes the iterator; its subscription ends when it is dropped.
    public func makeAsyncIterator() -> Iterator { Iterator(subscription.makeAsyncIterator()) }

    /// Reads the events of one subscription.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: Broadcaster<Element>.Subscription.Iterator

        init(_ base: Broadcaster<Element>.Subscription.Iterator) { self.base = base }

        /// The next event, waiting for one if need be; `nil` once the
        /// subscription ended.
        public mutating func next() async -> Element? { await base.next() }

        /// The next event, waiting for one on `actor`; `nil` once the
        /// subscription ended.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await base.next(isolation: actor)
        }
    }
}
