import CloudCodable
import CloudProtocol
import Foundation
import Logging
import PostgresNIO

/// A ``ChangeBroadcasting`` over PostgreSQL's `LISTEN`/`NOTIFY`, for
/// several `cumulus serve` processes on one PostgreSQL database.
///
/// One dedicated connection listens on a channel (`cumulus_changes`) and
/// sends this server's announcements with `pg_notify`; it also listens on
/// ``credentialsChannel``, which the storage notifies when a credential is
/// taken away. When the connection drops, the broadcaster reconnects with
/// backoff and then delivers ``ChangeBroadcastEvent/mayHaveMissed``. A
/// payload carries an origin (random per broadcaster, so a server ignores
/// its own), the database key and zone names, never tokens or record contents; an announcement too long for one
/// notification goes as several, sent in one transaction and put together
/// again by the receivers.
///
/// ```swift
/// let broadcaster = try await PostgresChangeBroadcaster(url: try PostgresURL(text), logger: logger)
/// let service = CloudService(storage: storage, broadcaster: broadcaster)
/// ```
public final class PostgresChangeBroadcaster: ChangeBroadcasting {
    /// The channel servers listen on unless told otherwise.
    public static let defaultChannel = "cumulus_changes"
    /// The `application_name` of the listening connection, to find it in
    /// `pg_stat_activity`.
    public static let applicationName = "cumulus-changes"
    /// The channel a storage transaction that takes a credential away
    /// notifies (``ChangeBroadcastEvent/credentialsChanged``): fixed, since
    /// every server on the database trusts credentials of the same tables.
    public static let credentialsChannel = "cumulus_credentials"

    /// The channel this broadcaster listens and sends on.
    public let channel: String
    private let link: Link
    private let outbox: AsyncStream<ChangeAnnouncement>.Continuation
    private let listening: Task<Void, Never>
    private let sending: Task<Void, Never>
    /// Where announcements sent and received are counted, for a server's metrics.
    let observer = BroadcastObserver()

    /// Connects to the server at `url` and listens on `channel`; returns
    /// once the listening has started, so that no later write is missed.
    ///
    /// - Parameters:
    ///   - channel: The notification channel, lowercase letters, digits and
    ///     `_`; every server of one deployment uses the same one.
    ///   - logger: Where lost connections and dropped announcements are told.
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a bad channel name, or
    ///   the connection's error when the server cannot be reached.
    public init(
        url: PostgresURL, channel: String = defaultChannel, logger: Logger
    ) async throws {
        guard Self.isValidChannel(channel) else {
            throw CloudError(
                .badRequest,
                reason: "the notification channel '\(channel)' is not lowercase letters, digits and _")
        }
        var configuration = try url.connectionConfiguration()
        configuration.options.additionalStartupParameters.append(("application_name", Self.applicationName))
        self.channel = channel
        let link = Link(
            configuration: configuration, channel: channel, origin: ServerSecrets.randomHex(bytes: 16), logger: logger,
            observer: observer)
        self.link = link
        let first = try await link.connect()
        let (ready, readyContinuation) = AsyncStream.makeStream(of: (any Error)?.self)
        listening = Task { await link.listen(first: first, ready: readyContinuation) }
        var failure: (any Error)? = nil
        for await result in ready {
            failure = result
            break
        }
        let (announcements, outbox) = AsyncStream.makeStream(
            of: ChangeAnnouncement.self, bufferingPolicy: .bufferingOldest(Link.outboxLimit))
        self.outbox = outbox
        sending = Task { await link.send(announcements) }
        if let failure {
            await close()
            throw failure
        }
    }

    deinit {
        outbox.finish()
        listening.cancel()
        sending.cancel()
    }

    /// Queues the announcement for sending; see ``ChangeBroadcasting/announce(_:)``.
    public func announce(_ announcement: ChangeAnnouncement) {
        if case .dropped = outbox.yield(announcement) {
            link.markLost(reason: "the queue of announcements to send is full")
        }
    }

    /// Sets what receives the other servers' announcements.
    public func setReceiver(_ receiver: @escaping @Sendable (ChangeBroadcastEvent) async -> Void) {
        link.setReceiver(receiver)
    }

    /// Stops listening and sending, and closes the connection.
    public func close() async {
        outbox.finish()
        await link.shut()
        listening.cancel()
        sending.cancel()
        await listening.value
        await sending.value
    }

    /// Channel names go into `LISTEN "name"` unescaped: keep them plain.
    private static func isValidChannel(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count < 64
            && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }
}

/// The connection, its state, and the loops that listen and send; apart
/// from the broadcaster so that the loops do not keep the broadcaster alive.
private final class Link: Sendable {
    /// The most announcements waiting to be sent; more are dropped and the
    /// other servers told to catch up.
    static let outboxLimit = 10_000
    /// The most announcements whose parts are being put together at once.
    static let assemblyLimit = 100

    let configuration: PostgresConnection.Configuration
    let channel: String
    let origin: String
    let logger: Logger
    let observer: BroadcastObserver
    private let state = LockedState(State())

    private struct State: Sendable {
        /// The listening connection, while it listens.
        var connection: PostgresConnection?
        /// Sends waiting for a connection.
        var waiters: [CheckedContinuation<PostgresConnection?, Never>] = []
        var receiver: (@Sendable (ChangeBroadcastEvent) async -> Void)?
        /// Whether announcements were dropped since the last one sent.
        var lost = false
        var closed = false
        /// The parts of split announcements received so far, by origin and number.
        var assembling: [PartKey: [Int: ChangePayload]] = [:]
        var nextSerial = 0
    }

    private struct PartKey: Hashable, Sendable {
        var origin: String
        var serial: Int
    }

    init(
        configuration: PostgresConnection.Configuration, channel: String, origin: String, logger: Logger,
        observer: BroadcastObserver
    ) {
        self.configuration = configuration
        self.channel = channel
        self.origin = origin
        self.logger = logger
        self.observer = observer
    }

    func connect() async throws -> PostgresConnection {
        try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
    }

    func setReceiver(_ receiver: @escaping @Sendable (ChangeBroadcastEvent) async -> Void) {
        state.withLock { $0.receiver = receiver }
    }

    func markLost(reason: String) {
        logger.warning("a change announcement was dropped: \(reason)")
        observer.dropped()
        state.withLock { $0.lost = true }
    }

    /// Stops both loops: no connection is handed out any more.
    func shut() async {
        let (connection, waiters) = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return (state.connection, state.waiters)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        try? await connection?.close()
    }

    // MARK: Listening

    /// Listens on `first`, then on each new connection after one drops;
    /// reports the first `LISTEN`'s outcome to `ready`.
    func listen(first: PostgresConnection, ready: AsyncStream<(any Error)?>.Continuation) async {
        var connection = first
        var reconnected = false
        var ready: AsyncStream<(any Error)?>.Continuation? = ready
        while true {
            do {
                try await connection.listen(on: channel) { notifications in
                    try await connection.listen(on: PostgresChangeBroadcaster.credentialsChannel) { credentials in
                        ready?.yield(nil)
                        ready = nil
                        guard attach(connection) else { return }
                        if reconnected {
                            logger.info("listening for change announcements again")
                            await deliver(.mayHaveMissed)
                        }
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask {
                                for try await _ in credentials { await self.deliver(.credentialsChanged) }
                            }
                            for try await notification in notifications {
                                await receive(notification.payload)
                            }
                            group.cancelAll()
                        }
                    }
                }
            } catch {
                if let ready {
                    ready.yield(error)
                    try? await connection.close()
                    return
                }
                if !isClosed {
                    logger.warning("the connection for change announcements dropped: \(String(reflecting: error))")
                }
            }
            detach(connection)
            try? await connection.close()
            guard let next = await reconnect() else { return }
            connection = next
            reconnected = true
        }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    /// Hands the listening connection to the waiting sends; `false` once closed.
    private func attach(_ connection: PostgresConnection) -> Bool {
        let waiters = state.withLock { state -> [CheckedContinuation<PostgresConnection?, Never>]? in
            guard !state.closed else { return nil }
            state.connection = connection
            // Parts of announcements sent while not listening will never be complete.
            state.assembling = [:]
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        observer.connected(true)
        for waiter in waiters { waiter.resume(returning: connection) }
        return true
    }

    private func detach(_ connection: PostgresConnection) {
        state.withLock { state in
            if state.connection === connection { state.connection = nil }
        }
        observer.connected(false)
    }

    /// A new connection, trying again with growing pauses; `nil` once closed.
    private func reconnect() async -> PostgresConnection? {
        var pause = Duration.milliseconds(50)
        while !Task.isCancelled, !isClosed {
            do {
                return try await connect()
            } catch {
                logger.warning("cannot connect for change announcements: \(String(reflecting: error))")
            }
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(5))
        }
        return nil
    }

    private func deliver(_ event: ChangeBroadcastEvent) async {
        if case .changed = event { observer.received() } else { observer.caughtUp() }
        guard let receiver = state.withLock({ $0.receiver }) else { return }
        await receiver(event)
    }

    /// Delivers one notification: another server's announcement (whole
    /// once all its parts are in), or a catch-up.
    private func receive(_ text: String) async {
        guard let payload = try? JSONDecoder().decode(ChangePayload.self, from: Data(text.utf8)) else {
            logger.warning("an unreadable change announcement arrived; catching up")
            await deliver(.mayHaveMissed)
            return
        }
        guard payload.origin != origin else { return }
        if payload.lost == true {
            await deliver(.mayHaveMissed)
            return
        }
        guard let parts = assemble(payload) else { return }
        guard let environment = payload.environment.flatMap(CloudEnvironment.init(rawValue:)),
            let scope = payload.scope.flatMap(DatabaseScope.init(rawValue:)), let container = payload.container
        else {
            logger.warning("a change announcement names no database; catching up")
            await deliver(.mayHaveMissed)
            return
        }
        let zones = parts.allSatisfy { $0.zones != nil } ? parts.flatMap { $0.zones ?? [] } : nil
        let key = DatabaseKey(container: container, environment: environment, scope: scope, owner: payload.owner ?? "")
        await deliver(.changed(ChangeAnnouncement(key: key, zoneNames: zones)))
    }

    /// All parts of the payload's announcement in order, or `nil` while some
    /// are still to come.
    private func assemble(_ payload: ChangePayload) -> [ChangePayload]? {
        guard let count = payload.parts, count > 1, let serial = payload.serial, let part = payload.part else {
            return [payload]
        }
        let key = PartKey(origin: payload.origin, serial: serial)
        return state.withLock { state -> [ChangePayload]? in
            if state.assembling[key] == nil, state.assembling.count >= Self.assemblyLimit {
                // Only lost parts pile up here.
                state.assembling = [:]
            }
            state.assembling[key, default: [:]][part] = payload
            guard let received = state.assembling[key], received.count >= count else { return nil }
            state.assembling[key] = nil
            return received.keys.sorted().compactMap { received[$0] }
        }
    }

    // MARK: Sending

    /// Sends each announcement through the listening connection, waiting
    /// for one while it reconnects.
    func send(_ announcements: AsyncStream<ChangeAnnouncement>) async {
        for await announcement in announcements {
            let serial = state.withLock { state in
                state.nextSerial += 1
                return state.nextSerial
            }
            if let payloads = ChangePayload.split(announcement, origin: origin, serial: serial) {
                guard let connection = await waitForConnection() else { return }
                if await notify(payloads, through: connection) { observer.sent() }
            } else {
                markLost(reason: "the database's names are too long for a notification")
            }
            guard await catchUpOthers() else { return }
        }
    }

    /// After announcements were dropped, asks the other servers to catch up,
    /// trying until it goes out; `false` once closed.
    private func catchUpOthers() async -> Bool {
        var pause = Duration.milliseconds(50)
        while state.withLock({ $0.lost }) {
            guard let connection = await waitForConnection(),
                let marker = ChangePayload(origin: origin, lost: true).encoded()
            else { return false }
            // Cleared first: a loss while the marker is on its way needs another marker.
            state.withLock { $0.lost = false }
            guard await !notify([marker], through: connection) else { continue }
            // The connection is gone but not yet replaced: wait for the listener to notice.
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, .seconds(5))
        }
        return true
    }

    private func waitForConnection() async -> PostgresConnection? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> PostgresConnection?? in
                if state.closed { return .some(nil) }
                if let connection = state.connection { return .some(connection) }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Sends payloads in one transaction, so that the parts of one
    /// announcement arrive together or not at all. Through
    /// ``PostgresStatements``: a statement sent as the connection drops
    /// would otherwise stall every later announcement.
    private func notify(_ payloads: [String], through connection: PostgresConnection) async -> Bool {
        do {
            _ = try await PostgresStatements.shared.run(
                "SELECT pg_notify(\(channel), payload) FROM unnest(\(payloads)::text[]) AS payload", on: connection,
                logger: logger)
            return true
        } catch {
            markLost(reason: "\(error)")
            return false
        }
    }
}

/// One notification's JSON: an announcement or a part of one, or a
/// request to catch up.
private struct ChangePayload: Codable, Sendable {
    /// PostgreSQL refuses payloads of 8000 bytes or more.
    static let limit = 7_900

    var origin: String
    var lost: Bool?
    var container: String?
    var environment: String?
    var scope: String?
    var owner: String?
    /// Absent when the zones are not known.
    var zones: [String]?
    var serial: Int?
    var part: Int?
    var parts: Int?

    init(origin: String, lost: Bool) {
        self.origin = origin
        self.lost = lost
    }

    init(_ announcement: ChangeAnnouncement, origin: String) {
        self.origin = origin
        container = announcement.key.container
        environment = announcement.key.environment.rawValue
        scope = announcement.key.scope.rawValue
        owner = announcement.key.owner
        zones = announcement.zoneNames
    }

    func encoded() -> String? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The announcement as payloads under the limit, the zones spread over
    /// parts; unknown zones when a single name does not fit; `nil` when
    /// even the database's names do not fit.
    static func split(_ announcement: ChangeAnnouncement, origin: String, serial: Int) -> [String]? {
        var base = ChangePayload(announcement, origin: origin)
        guard let zones = announcement.zoneNames, !zones.isEmpty else { return base.encoded().map { [$0] } }
        base.zones = []
        // The largest numbers a part can carry, so that the measured room holds for every part.
        base.serial = serial
        base.part = zones.count
        base.parts = zones.count
        guard let baseSize = base.encoded()?.utf8.count, baseSize < limit else { return nil }
        let encoder = JSONEncoder()
        var groups: [[String]] = [[]]
        var size = baseSize
        for zone in zones {
            // A name's size in the JSON array, with its comma.
            guard let encoded = try? encoder.encode([zone]) else { return nil }
            let zoneSize = encoded.count - 1
            guard baseSize + zoneSize <= limit else {
                base.zones = nil
                base.serial = nil
                base.part = nil
                base.parts = nil
                return base.encoded().map { [$0] }
            }
            if size + zoneSize > limit {
                groups.append([])
                size = baseSize
            }
            groups[groups.count - 1].append(zone)
            size += zoneSize
        }
        guard groups.count > 1 else {
            var whole = ChangePayload(announcement, origin: origin)
            whole.zones = zones
            return whole.encoded().map { [$0] }
        }
        var payloads: [String] = []
        for (index, group) in groups.enumerated() {
            var part = base
            part.zones = group
            part.part = index
            part.parts = groups.count
            guard let text = part.encoded() else { return nil }
            payloads.append(text)
        }
        return payloads
    }
}
