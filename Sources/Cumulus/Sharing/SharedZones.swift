import CloudCodable
import CloudProtocol

extension CloudDatabase {
    /// The zones other users shared with the signed-in user and that user
    /// accepted (on any of their devices), each with its owner: the zones
    /// an engine with ``SyncConfiguration/init(sharedZone:)`` can sync.
    ///
    /// - Throws: ``CloudError``: `BAD_REQUEST` on a database whose
    ///   ``scope`` is not ``DatabaseScope/shared``, or the request's own error.
    public func acceptedSharedZones() async throws -> [ZoneID] {
        guard scope == .shared else {
            throw CloudError(
                .badRequest, reason: "shared zones are listed by the shared database, not the \(scope) one")
        }
        return try await listZones().map(\.zoneID)
    }

    /// The accepted shared zones (``acceptedSharedZones()``) now, and again
    /// each time they change: when another device of the user accepts a
    /// share, or the user leaves one, or its owner stops sharing.
    ///
    /// The list is read at once, again on each of the database's
    /// notifications, and every `pollInterval` on `clock` (a notification
    /// channel may miss a change). A list equal to the last one is not
    /// yielded again; a read that fails is tried at the next occasion.
    /// The sequence ends when the reading task is cancelled or the loop
    /// ends.
    public func sharedZoneUpdates(
        pollInterval: Duration = .seconds(60), clock: any Clock<Duration> = ContinuousClock()
    ) -> AsyncStream<[ZoneID]> {
        let (stream, continuation) = AsyncStream.makeStream(of: [ZoneID].self, bufferingPolicy: .bufferingNewest(1))
        let (ticks, tick) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let notifications = notifications()
        let listener = Task {
            for await _ in notifications { tick.yield() }
        }
        let poller = Task {
            while !Task.isCancelled {
                do { try await clock.sleep(for: pollInterval) } catch { return }
                tick.yield()
            }
        }
        let reader = Task {
            var last: [ZoneID]?
            var iterator = ticks.makeAsyncIterator()
            repeat {
                if let zones = try? await acceptedSharedZones() {
                    let sorted = zones.sorted(by: Self.zoneOrder)
                    if sorted != last {
                        last = sorted
                        continuation.yield(sorted)
                    }
                }
            } while await iterator.next() != nil && !Task.isCancelled
        }
        continuation.onTermination = { _ in
            listener.cancel()
            poller.cancel()
            reader.cancel()
            tick.finish()
        }
        return stream
    }

    /// A stable order for shared zones: by owner, then by name, as bytes.
    private static func zoneOrder(_ first: ZoneID, _ second: ZoneID) -> Bool {
        let firstOwner = Array((first.ownerRecordName ?? "").utf8)
        let secondOwner = Array((second.ownerRecordName ?? "").utf8)
        if firstOwner != secondOwner { return firstOwner.lexicographicallyPrecedes(secondOwner) }
        return Array(first.zoneName.utf8).lexicographicallyPrecedes(Array(second.zoneName.utf8))
    }
}
