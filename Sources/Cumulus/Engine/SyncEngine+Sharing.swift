import CloudCodable
import CloudProtocol

/// Sharing, from either side.
///
/// The owner shares a model (with the models below it, whose
/// ``CloudCodable/cloudParentIdentifier`` leads to it) or the engine's whole
/// zone, changes who takes part and stops sharing. These are requests to
/// the server, made at once: they throw when it cannot be reached, and
/// change nothing in the journal. A participant opens an engine on the
/// shared database with ``SyncConfiguration/init(sharedZone:)`` and syncs
/// like any device.
extension SyncEngine {
    /// Shares `model` and the models below it, and returns the share with
    /// its URL. The model must be on the server already (``sync()`` first).
    ///
    /// - Throws: ``CloudError``: `NOT_FOUND` for a model the server does
    ///   not have yet, `ALREADY_SHARED` for one shared already
    ///   (``fetchShare(of:)`` returns that share, ``saveShare(_:)`` changes
    ///   it) or inside another share.
    public func share(
        _ model: Model, title: String? = nil, participants: [ShareParticipant] = [],
        publicPermission: SharePermission = .none
    ) async throws -> Share {
        try checkOpen()
        let share = try await database.shareRecord(
            named: model.cloudIdentifier, in: zoneID, title: title, participants: participants,
            publicPermission: publicPermission)
        requestAutomaticSync(fetching: true)
        return share
    }

    /// Shares every model of the engine's zone (and of the other engines
    /// that share the zone).
    ///
    /// - Throws: ``CloudError``: `ALREADY_SHARED` when the zone is shared
    ///   already (``fetchZoneShare()`` returns that share) or models of it are.
    public func shareZone(
        title: String? = nil, participants: [ShareParticipant] = [], publicPermission: SharePermission = .none
    ) async throws -> Share {
        try checkOpen()
        return try await database.shareZone(
            zoneID, title: title, participants: participants, publicPermission: publicPermission)
    }

    /// The share that `model` is the root of, or `nil`.
    public func fetchShare(of model: Model) async throws -> Share? {
        try checkOpen()
        let found = try await database.lookupRecords([model.cloudIdentifier], zoneID: zoneID, desiredKeys: [])
        if let error = found.first?.error, error.code != .notFound { throw error }
        guard let shareName = found.first?.record?.share else { return nil }
        return try await database.fetchShare(named: shareName, in: zoneID)
    }

    /// The share of the engine's whole zone, or `nil`.
    public func fetchZoneShare() async throws -> Share? {
        try checkOpen()
        return try await database.fetchShare(named: ShareDetails.zoneShareName, in: zoneID)
    }

    /// Saves the participants, permissions and public permission of a
    /// share; see ``CloudDatabase/saveShare(_:)``.
    public func saveShare(_ share: Share) async throws -> Share {
        try checkOpen()
        return try await database.saveShare(share)
    }

    /// Stops sharing: every participant loses access; the models stay.
    public func stopSharing(_ share: Share) async throws {
        try checkOpen()
        try await database.stopSharing(share)
        requestAutomaticSync(fetching: true)
    }

    /// Leaves a share this user accepted (an engine on the shared
    /// database): the owner keeps the data, and the shared models leave
    /// this device once the engine next syncs (``SyncEvent/shareLost(discardedChanges:)``).
    public func leave(_ share: Share) async throws {
        try checkOpen()
        var record = share.record
        record.zoneID = zoneID
        let results = try await database.modifyRecords(
            [RecordOperation(.forceDelete, record)], zoneID: zoneID, atomic: true)
        if let error = results.first?.error, error.code != .notFound, error.code != .zoneNotFound { throw error }
        requestAutomaticSync(fetching: true)
    }

    /// Gives up local changes that have not reached the server (for
    /// instance ones refused for lack of permission, see
    /// ``refusedChanges``): each model goes back to the server's version,
    /// or away when the server has none. A change sent and not yet
    /// answered is kept.
    public func discardChanges(identifiers: [String]) async throws {
        try checkOpen()
        try await carryOut(replica.discard(identifiers))
        eventBroadcaster.yield(.pendingChanges(replica.pending.count))
    }
}
