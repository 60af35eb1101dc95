import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import Hummingbird

/// Shares, a record's standing, and a user's subscriptions and channels:
/// all read through the record service as the user concerned.
extension ConsoleRoutes {
    func addSharing(to console: RouterGroup<CumulusRequestContext>) {
        console.get("shares") { request, _ in try await page(request) { try await sharesPage($0, $1) } }
        console.get("share-reach") { request, _ in try await page(request) { try await reachPage($0, $1) } }
        console.get("deleted") { request, _ in try await page(request) { try await deletedPage($0, $1) } }
    }

    /// Every share of a zone of the user's private database, with its participants.
    private func sharesPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try Self.ownerDatabase(query)
        let zoneID = try database.zoneID(query)
        let shares = try await service.rules.shares(in: zoneID, as: database.caller)
        let zoneParameters = database.parameters(zone: zoneID)
        let rows = shares.map { inspected -> [String: Any] in
            let share = inspected.share
            var row: [String: Any] = [
                "recordName": share.recordName, "title": inspected.title ?? "",
                "publicPermission": share.publicPermission.rawValue, "owner": share.owner,
                "link": Self.recordLink(database, zoneID, share.recordName),
                "participants": share.participants.map(Self.participantValues),
            ]
            if let root = share.rootRecordName {
                row["root"] = root
                row["rootLink"] = Self.recordLink(database, zoneID, root)
            }
            return row
        }
        var values = Self.databaseValues(database).merging(Self.zoneValues(zoneID, database)) { $1 }
        values["shares"] = rows
        values["hidden"] = zoneParameters.map { ["name": $0.0, "value": $0.1] }
        values["record"] = query["record"] ?? ""
        values["recordsLink"] = ConsoleLinks.link("/console/records", zoneParameters)
        return html(.ok, pages.render("shares", title: "Shares", session: session, values))
    }

    /// "Would this user see this record?": the user's own `records/lookup`
    /// in their shared database answers; the rules of shares say why.
    private func reachPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try Self.ownerDatabase(query)
        let zoneID = try database.zoneID(query)
        let back = ConsoleLinks.link("/console/shares", database.parameters(zone: zoneID))
        guard let recordName = query["record"], !recordName.isEmpty, let asked = query["viewer"], !asked.isEmpty else {
            throw ConsoleFailure(.badRequest, "Name a record and a user.", back: back)
        }
        // The form takes a user's name or record name; participants are by record name. Only a
        // user of the container is asked as: their lookup makes their shared database, as theirs would.
        let accounts = try await service.users(container: database.container)
        guard
            let viewer = accounts.first(where: { $0.name.isExactly(asked) })?.recordName
                ?? accounts.first(where: { $0.recordName.isExactly(asked) })?.recordName
        else { throw ConsoleFailure(.notFound, "No user of this name in the container.", back: back) }
        let reach: ShareReach
        do {
            reach = try await service.rules.shareReach(
                of: recordName, inZone: zoneID.zoneName, owner: database.caller, viewer: viewer)
        } catch let error as CloudError {
            throw ConsoleFailure(.notFound, "\(error.code.rawValue): \(error.reason)", back: back)
        }
        var values = Self.databaseValues(database).merging(Self.zoneValues(zoneID, database)) { $1 }
        values["record"] = recordName
        values["viewer"] = viewer
        values["back"] = back
        values["reason"] = Self.words(reach, viewer: viewer, record: recordName)
        if case .owner = reach {
            values["answer"] = "\(viewer) owns the zone: the record is in their private database."
        } else {
            let (answer, seen) = try await sharedLookup(recordName, zone: zoneID.zoneName, database, viewer: viewer)
            values["answer"] = answer
            let expected: Bool
            if case .visible = reach { expected = true } else { expected = false }
            if seen != expected {
                values["disagree"] = "The lookup and the rules of shares disagree: the lookup is what the user gets."
            }
            if seen {
                let shared = ConsoleDatabase(
                    container: database.container, environment: database.environment, scope: .shared, user: viewer)
                let sharedZone = ZoneID(zoneName: zoneID.zoneName, ownerRecordName: database.user)
                values["seenLink"] = Self.recordLink(shared, sharedZone, recordName)
            }
        }
        return html(.ok, pages.render("shareReach", title: "Would this user see it?", session: session, values))
    }

    /// The tombstones among the zone's last changes, as the user may see them.
    private func deletedPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let database = try ConsoleDatabase(query)
        let zoneID = try database.zoneID(query)
        let deletions = try await service.rules.recentDeletions(
            in: zoneID, lastChanges: Self.deletionWindow, as: database.caller)
        var values = Self.databaseValues(database).merging(Self.zoneValues(zoneID, database)) { $1 }
        values["window"] = Self.deletionWindow
        values["deleted"] = deletions.map { ["name": $0.recordName, "type": $0.recordType, "serial": $0.serial] }
        values["recordsLink"] = ConsoleLinks.link("/console/records", database.parameters(zone: zoneID))
        return html(.ok, pages.render("deleted", title: "Recently deleted", session: session, values))
    }

    /// How many of a zone's last changes the deleted page looks through.
    static let deletionWindow = 200

    /// The viewer's own `records/lookup` of the record in their shared
    /// database, through the same path as their request: what it answered,
    /// and whether it gave the record.
    private func sharedLookup(_ name: String, zone: String, _ database: ConsoleDatabase, viewer: String)
        async throws -> (String, Bool)
    {
        let caller = Caller(
            container: database.container, environment: database.environment, scope: .shared, user: viewer)
        let zoneID = ZoneID(zoneName: zone, ownerRecordName: database.user)
        let request = CloudRequest.lookupRecords(recordNames: [name], zoneID: zoneID, desiredKeys: nil)
        let response: CloudResponse
        do {
            response = try await service.perform(request, as: caller)
        } catch let error as CloudError {
            return ("\(viewer)'s records/lookup failed: \(error.code.rawValue): \(error.reason)", false)
        }
        guard case .records(let results) = response, let result = results.first else {
            throw ConsoleFailure(.internalServerError, "records/lookup answered something else.")
        }
        if let error = result.error {
            return ("\(viewer)'s records/lookup answered \(error.code.rawValue): \(error.reason)", false)
        }
        guard result.record != nil else { return ("\(viewer)'s records/lookup answered no record.", false) }
        return ("\(viewer)'s records/lookup in their shared database answers the record.", true)
    }

    /// The reach in words, for the page.
    static func words(_ reach: ShareReach, viewer: String, record: String) -> String {
        switch reach {
        case .owner:
            return "\(viewer) owns the zone."
        case .visible(let share, let permission):
            return "Visible: \(viewer) accepted share \(share), which covers \(record), with \(permission.rawValue)."
        case .notAccepted(let share, let status):
            return
                "Not accepted: \(viewer) is invited to share \(share), which covers \(record), but has not accepted it (\(status.rawValue))."
        case .outsideShares:
            return
                "Outside the share: no share \(viewer) takes part in covers \(record) (it is not under a shared root, and the zone is not shared whole)."
        case .notParticipant:
            return "Not a participant: no share that covers \(record) names \(viewer)."
        }
    }

    /// The values of a participant's row.
    private static func participantValues(_ participant: ShareParticipant) -> [String: Any] {
        [
            "user": participant.userRecordName ?? participant.lookupInfo?.userRecordName ?? "",
            "email": participant.lookupInfo?.emailAddress ?? "",
            "status": participant.acceptanceStatus.rawValue, "permission": participant.permission.rawValue,
            "role": participant.role.rawValue,
        ]
    }

    /// The link to the share page of a zone of the user's private database.
    static func sharesLink(_ database: ConsoleDatabase, _ zoneID: ZoneID) -> String {
        ConsoleLinks.link("/console/shares", database.parameters(zone: zoneID))
    }

    /// The database of a share page: the owner's private one.
    private static func ownerDatabase(_ query: [String: String]) throws -> ConsoleDatabase {
        let database = try ConsoleDatabase(query)
        guard database.scope == .private else {
            throw ConsoleFailure(.badRequest, "Shares are shown from their owner's private database.")
        }
        return database
    }

    // MARK: The record page's standing

    /// What the record page shows of the record's history and shares:
    /// read as the user the page looks as, so it shows what they may see.
    func standingValues(_ database: ConsoleDatabase, _ zoneID: ZoneID, _ name: String) async throws -> [String: Any] {
        guard let standing = try await service.rules.recordStanding(named: name, in: zoneID, as: database.caller)
        else { return [:] }
        var values: [String: Any] = [
            "hasStanding": true, "hasAncestors": !standing.ancestors.isEmpty, "serial": standing.serial,
            "zoneSerial": standing.zoneSerial,
            "laterChanges": standing.zoneSerial - standing.serial,
            "ancestors": standing.ancestors.map { ["name": $0, "link": Self.recordLink(database, zoneID, $0)] },
        ]
        let covering = [standing.hierarchyShare, standing.zoneShare].compactMap { $0 }
        guard database.scope != .public, !covering.isEmpty else { return values }
        // The share page is the owner's: reached through their private database.
        let owner = zoneID.namedOwner ?? database.user
        let ownerDatabase = ConsoleDatabase(
            container: database.container, environment: database.environment, scope: .private, user: owner)
        let sharesLink = ConsoleLinks.link(
            "/console/shares", ownerDatabase.parameters(zone: ZoneID(zoneName: zoneID.zoneName)) + [("record", name)])
        values["coveringShares"] = covering.map { share -> [String: Any] in
            [
                "recordName": share.recordName,
                "root": share.rootRecordName ?? "", "isZoneShare": share.rootRecordName == nil, "link": sharesLink,
            ]
        }
        return values
    }

    // MARK: The user page's subscriptions and channels

    /// The user's subscriptions in each database and their open channels
    /// (never a channel's token or its hash).
    func notificationValues(container: String, user: String) async throws -> [String: Any] {
        var databases: [[String: Any]] = []
        for environment in [CloudEnvironment.development, .production] {
            for scope in [DatabaseScope.private, .shared, .public] {
                let caller = Caller(container: container, environment: environment, scope: scope, user: user)
                let subscriptions = try await service.rules.subscriptions(of: caller)
                guard !subscriptions.isEmpty else { continue }
                databases.append([
                    "environment": environment.rawValue, "scope": scope.rawValue,
                    "subscriptions": subscriptions.map(Self.subscriptionValues),
                ])
            }
        }
        let channels = try await service.rules.channels(ofUser: user, container: container).map { channel in
            [
                "environment": channel.key.environment.rawValue, "scope": channel.key.scope.rawValue,
                "start": String(channel.start), "lastUsed": Self.date(milliseconds: channel.lastUsed),
            ]
        }
        return ["subscriptionDatabases": databases, "channels": channels]
    }

    private static func subscriptionValues(_ subscription: Subscription) -> [String: Any] {
        var values: [String: Any] = ["id": subscription.subscriptionID, "zone": subscription.zoneID.zoneName]
        switch subscription.kind {
        case .zone:
            values["type"] = "zone"
        case .query(let query, let firesOn):
            values["type"] = "query"
            values["recordType"] = query.recordType
            values["filters"] = query.filters.map { filter in
                "\(filter.fieldName) \(filter.comparator.rawValue) \(ConsoleValues.text(filter.fieldValue))"
            }
            values["firesOn"] = QueryNotification.Reason.allCases.filter(firesOn.contains).map(\.rawValue)
                .joined(separator: ", ")
        }
        return values
    }
}
