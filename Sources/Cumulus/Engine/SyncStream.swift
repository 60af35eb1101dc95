/// Values an engine hands out, from the moment one of its sequences was
/// read: each read of ``SyncEngine/changes``, ``SyncEngine/events`` or
/// ``SyncEngine/accountStatus`` is a subscriber of its own.
///
/// ```swift
/// // Two readers, each with a subscription of its own.
/// Task { for await change in engine.changes { show(change) } }
/// Task { for await change in engine.changes { log(change) } }
/// ```
///
/// What a subscriber keeps of the values it has not read yet depends on
/// the sequence: everything, in order, for ``ModelChanges`` and
/// ``SyncEvents``; only the newest value, after the latest one at once, for
/// ``AccountStatusUpdates``.
///
/// The subscription ends, and what it holds is released, when the loop ends
/// (a `break`, a `return`, or the iterator dropped), when the reading task is
/// cancelled (its next call to `next()` returns `nil`, even with values
/// waiting), or when the sequence is dropped without being iterated. When the
/// engine closes, iteration ends once the reader has read what came before.
/// Iterate a value once, in one task; read the engine's property again for
/// another reader.
public struct SyncStream<Element: Sendable>: AsyncSequence, Sendable {
    private let subscription: Broadcaster<Element>.Subscription

    init(_ subscription: Broadcaster<Element>.Subscription) { self.subscription = subscription }

    /// Makes the iterator; its subscription ends when it is dropped.
    public func makeAsyncIterator() -> Iterator { Iterator(subscription.makeAsyncIterator()) }

    /// Reads the values of one subscription.
    public struct Iterator: AsyncIteratorProtocol {
        private var base: Broadcaster<Element>.Subscription.Iterator

        init(_ base: Broadcaster<Element>.Subscription.Iterator) { self.base = base }

        /// The next value, waiting for one if need be; `nil` once the
        /// subscription ended.
        public mutating func next() async -> Element? { await base.next() }

        /// The next value, waiting for one on `actor`; `nil` once the
        /// subscription ended.
        @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            await base.next(isolation: actor)
        }
    }
}

/// The confirmed changes to an engine's models, from the moment
/// ``SyncEngine/changes`` was read: each read is a subscriber of its own.
///
/// ```swift
/// for await change in engine.changes {
///     switch change {
///     case .updated(let notes): show(notes)
///     case .deleted(let identifiers): remove(identifiers)
///     }
/// }
/// ```
///
/// Nothing is dropped: the changes a reader has not asked for yet wait for
/// it, however many, in the order the engine applied them (see
/// ``ModelChange``). A subscriber that is kept but not read therefore holds
/// every later change in memory. The subscription ends as any
/// ``SyncStream``'s does.
public typealias ModelChanges<Model: Sendable> = SyncStream<ModelChange<Model>>

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
/// The subscription ends as any ``SyncStream``'s does.
public typealias AccountStatusUpdates = SyncStream<AccountStatus>

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
/// in memory. The subscription ends as any ``SyncStream``'s does.
public typealias SyncEvents = SyncStream<SyncEvent>
