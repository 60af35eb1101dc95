import CloudCodable
import CloudProtocol
import Foundation

/// Notification channels, kept in storage: any server on the same storage
/// answers a poll for a channel another made, and a restarted server
/// answers the channels it made before.
///
/// A channel's cursor is a serial of its database's zone history: a poll
/// answers the zones changed after it (each zone once, in its latest
/// change) as the notifications its user hears, so no change between the
/// last cursor and now is missed, whichever server wrote it or answers.
extension RecordService {
    /// `tokens/create`: a new channel for `caller`'s database; returns its
    /// token (64 hexadecimal characters), of which only the hash is stored.
    /// Channels no poll used for ``channelIdleLimit`` are forgotten here, and
    /// so are the user's least recently polled channels on that database
    /// beyond ``ServerLimits/channelsPerUser`` (their polls answer
    /// `NOT_FOUND`, and a client that still wants one opens another).
    ///
    /// `credential` names the credential the caller opened it with, in the
    /// host's terms (the hash of a token, say, never the token): the host's
    /// check of it (see ``pollChannel(token:cursor:timeout:credentialHolds:)``)
    /// ends the channel once it no longer holds.
    public func openChannel(for caller: Caller, credential: String? = nil) async throws -> String {
        try NameRules.check(caller)
        let context = try RequestContext(caller, request: .createToken(apnsEnvironment: nil))
        try await ensureDatabase(context.key)
        let token = ServerSecrets.randomHex(bytes: 32)
        let now = ServerTime.milliseconds(now())
        let idle = ServerTime.milliseconds(channelIdleLimit)
        let cutoff = queryNotificationCutoff()
        let channel = StoredChannel(
            tokenHash: ServerSecrets.sha256Hex(token), key: context.key, user: context.subscriber, start: 0,
            lastUsed: now,
            credential: credential)
        try await storage.write { transaction in
            var made = channel
            made.start = try await transaction.database(channel.key)?.serial ?? 0
            try await transaction.deleteChannels(unusedSince: ServerTime.elapsed(from: idle, to: now))
            try await transaction.deleteChannels(
                of: channel.key, user: channel.user, keepingNewest: ServerLimits.channelsPerUser - 1)
            try await transaction.deleteQueryNotifications(loggedBefore: cutoff)
            try await transaction.createChannel(made)
        }
        return token
    }

    /// The notification long poll: waits until the channel's database has
    /// changes after `cursor` (after the channel's creation when `nil`) that
    /// its user hears, or `timeout` passes, and answers them with the next
    /// cursor. An unknown or expired token throws `NOT_FOUND`, a cursor the
    /// server did not write `BAD_REQUEST`.
    ///
    /// `credentialHolds` is the host's check of the credential a channel was
    /// opened with, asked when the poll starts and again whenever the host
    /// says credentials changed (``credentialsChanged()``), which wakes the
    /// polls: a channel whose credential no longer holds is deleted and its
    /// poll throws `AUTHENTICATION_FAILED` at once.
    public func pollChannel(
        token: String, cursor: String?, timeout: Duration,
        credentialHolds: @escaping @Sendable (StoredChannel) async throws -> Bool = { _ in true }
    ) async throws -> NotificationBatch {
        // A cancelled poll's client has gone: it ends at once, empty, whatever storage said.
        do {
            guard !Task.isCancelled else { return NotificationBatch(notifications: [], cursor: cursor ?? "n0") }
            return try await poll(token: token, cursor: cursor, timeout: timeout, credentialHolds: credentialHolds)
        } catch  where Task.isCancelled {
            return NotificationBatch(notifications: [], cursor: cursor ?? "n0")
        }
    }

    /// Says that a credential may have been taken away (here, through
    /// another server, or by a command beside the server): every waiting
    /// poll wakes and checks its channel's credential again.
    public func credentialsChanged() {
        credentialChanges.withLock { $0 &+= 1 }
        waiters.wakeAll()
    }

    private func poll(
        token: String, cursor: String?, timeout: Duration,
        credentialHolds: @Sendable (StoredChannel) async throws -> Bool
    ) async throws -> NotificationBatch {
        let hash = ServerSecrets.sha256Hex(token)
        let found = try await storage.read { transaction in try await transaction.channel(tokenHash: hash) }
        let now = ServerTime.milliseconds(now())
        let idle = ServerTime.milliseconds(channelIdleLimit)
        guard let channel = found, ServerTime.elapsed(from: channel.lastUsed, to: now) <= idle else {
            throw CloudError(.notFound, reason: "there is no notification channel with this token")
        }
        var checkedUnder = credentialChanges.withLock { $0 }
        try await checkCredential(of: channel, credentialHolds)
        var start = channel.start
        if let cursor {
            guard cursor.first == "n", let parsed = Int64(cursor.dropFirst()), parsed >= 0 else {
                throw CloudError(.badRequest, reason: "the cursor '\(cursor)' is not valid")
            }
            start = parsed
        }
        try await touchIfStale(channel, since: channel.lastUsed)
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while !Task.isCancelled {
            let generation = waiters.generation(of: channel.key)
            let changes = credentialChanges.withLock { $0 }
            if changes != checkedUnder {
                checkedUnder = changes
                try await checkCredential(of: channel, credentialHolds)
            }
            let (entries, subscriptions, queryNotifications) = try await changedZones(of: channel, after: start)
            if let last = entries.last {
                // The zones only this channel's reader wrote since the cursor: it knows them already.
                let heard = entries.filter { !$0.isOnlyWrite(ofChannel: channel.tokenHash, after: start) }
                start = last.serial
                let notice = ChangeNotice(
                    key: channel.key, changedZones: heard.map(\.zoneName), subscriptions: subscriptions,
                    queryNotifications: queryNotifications)
                let notifications =
                    heard.isEmpty && queryNotifications.isEmpty ? [] : notice.notifications(for: channel.user)
                if !notifications.isEmpty {
                    try await touchIfStale(channel, since: now)
                    return NotificationBatch(notifications: notifications, cursor: "n\(start)")
                }
                continue
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero, !Task.isCancelled, !waiters.isClosed else {
                try await touchIfStale(channel, since: now)
                return NotificationBatch(notifications: [], cursor: "n\(start)")
            }
            await waiters.wait(channel.key, after: generation, timeout: remaining)
        }
        return NotificationBatch(notifications: [], cursor: "n\(start)")
    }

    /// Throws `AUTHENTICATION_FAILED`, deleting the channel, when the
    /// credential it was opened with no longer holds. The answer says the
    /// same for a revoked, expired or removed credential.
    private func checkCredential(
        of channel: StoredChannel, _ credentialHolds: @Sendable (StoredChannel) async throws -> Bool
    ) async throws {
        guard try await !credentialHolds(channel) else { return }
        try await storage.write { transaction in try await transaction.deleteChannel(tokenHash: channel.tokenHash) }
        throw CloudError(
            .authenticationFailed,
            reason: "the credential this notification channel was opened with was revoked or has expired")
    }

    /// Records that a poll uses the channel now, unless it did less than a
    /// tenth of the idle limit after `lastUsed`: a polled channel stays
    /// alive without a write per poll. A poll's end counts too, so a channel
    /// whose poll waited long is not taken for idle.
    private func touchIfStale(_ channel: StoredChannel, since lastUsed: Int64) async throws {
        let now = ServerTime.milliseconds(now())
        guard ServerTime.elapsed(from: lastUsed, to: now) > ServerTime.milliseconds(channelIdleLimit) / 10 else {
            return
        }
        try await storage.write { transaction in
            try await transaction.touchChannel(tokenHash: channel.tokenHash, lastUsed: now)
        }
    }

    /// Wakes the polls on a database another server wrote to.
    public func wakeChannels(of key: DatabaseKey) {
        waiters.wake(key)
    }

    /// Wakes every poll: a broadcaster may have lost another server's
    /// announcements, and each poll reads storage again.
    public func wakeAllChannels() {
        waiters.wakeAll()
    }

    /// Whether a poll here waits on the database.
    public func hasWaitingPolls(on key: DatabaseKey) -> Bool {
        waiters.hasWaiters(for: key)
    }

    /// Ends every waiting poll, and answers later ones at once (the host is closing).
    public func closeChannels() {
        waiters.close()
    }

    /// The zone history after `serial`, a page of it, and when there is
    /// any, the user's subscriptions and query notifications up to the
    /// page's end. Every write that logs a query notification logs its zone
    /// with the same serial or a later one, so the page's end bounds them.
    private func changedZones(of channel: StoredChannel, after serial: Int64) async throws
        -> ([ZoneLogEntry], [StoredSubscription], [StoredQueryNotification])
    {
        try await storage.read { transaction in
            guard let database = try await transaction.database(channel.key) else { return ([], [], []) }
            let entries = try await transaction.zoneLog(
                inDatabase: database.id, after: serial, limit: ServerLimits.resultsPerResponse)
            guard let last = entries.last else { return ([], [], []) }
            return (
                entries, try await transaction.subscriptions(inDatabase: database.id, user: channel.user),
                try await transaction.queryNotifications(
                    inDatabase: database.id, user: channel.user, after: serial, through: last.serial)
            )
        }
    }
}

extension ServerLimits {
    /// The most notification channels a user keeps open on one database: a
    /// client that opens one on each start, and crashes often, would
    /// otherwise fill the store until the idle limit clears them.
    static let channelsPerUser = 16
}
