import CloudCodable
import Foundation

/// One of a container's three databases.
public enum DatabaseScope: String, Sendable, Hashable, Codable, CaseIterable {
    /// Readable by every user; each record writable by its creator.
    case `public`
    /// The signed-in user's own data.
    case `private`
    /// Other users' zones shared with the signed-in user.
    case shared
}

/// An opaque position in a change history: of a zone (`changes/zone`) or of
/// a database's zones (`changes/database`).
public struct SyncToken: RawRepresentable, Sendable, Hashable, Codable {
    /// The token as the server wrote it.
    public var rawValue: String
    /// Wraps a token the server returned.
    public init(rawValue: String) { self.rawValue = rawValue }
}

/// How a `records/modify` operation treats the stored record.
public enum RecordOperationType: String, Sendable, Hashable, Codable, CaseIterable {
    /// Creates the record; `EXISTS` if the name is taken.
    case create
    /// Changes the fields sent; needs the current change tag.
    case update
    /// Changes the fields sent whatever the change tag; creates a missing record.
    case forceUpdate
    /// Replaces all fields (those not sent become absent); needs the current change tag.
    case replace
    /// Replaces all fields whatever the change tag; creates a missing record.
    case forceReplace
    /// Deletes the record; needs the current change tag.
    case delete
    /// Deletes the record whatever the change tag.
    case forceDelete

    /// Whether this is a delete.
    public var isDelete: Bool { self == .delete || self == .forceDelete }
    /// Whether the operation checks the record's change tag.
    public var checksChangeTag: Bool { self == .update || self == .replace || self == .delete }
    /// Whether the operation merges the fields sent into the stored ones
    /// (and so may clear some, ``RecordOperation/clearedFields``).
    package var mergesFields: Bool { self == .update || self == .forceUpdate }
}

/// One operation of a `records/modify` request.
public struct RecordOperation: Sendable, Hashable {
    /// What to do.
    public var type: RecordOperationType
    /// The record: for deletes only its name, zone and change tag matter.
    public var record: Record
    /// The fields the answer should carry, or `nil` for all of them.
    public var desiredKeys: [String]?
    /// Fields an `update` or `forceUpdate` clears, besides setting those of
    /// ``record``: a field delta's way of saying "no value any more". On the
    /// wire each is a field whose value is `null` (Cumulus's dialect, see
    /// ``CloudDatabase/supportsFieldClearing``); the other operations ignore it.
    public var clearedFields: [String]

    /// Creates an operation.
    public init(
        _ type: RecordOperationType, _ record: Record, desiredKeys: [String]? = nil, clearedFields: [String] = []
    ) {
        self.type = type
        self.record = record
        self.desiredKeys = desiredKeys
        self.clearedFields = clearedFields
    }
}

/// The outcome of one record in a modify, lookup or changes answer.
public enum RecordResult: Sendable, Hashable {
    /// The record as the server now holds it, with fresh metadata.
    case record(Record)
    /// The record was deleted (or is deleted, in a changes answer).
    case deleted(recordName: String, zoneID: ZoneID)
    /// This record failed; the others in the request may have succeeded.
    case failure(CloudError)

    /// The saved or fetched record, if any.
    public var record: Record? {
        if case .record(let record) = self { return record }
        return nil
    }

    /// The error, if this record failed.
    public var error: CloudError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// A comparison in a query's filter (the wire's `comparator`).
///
/// ``QueryEvaluation`` gives each its exact meaning. `NEAR` takes its
/// radius from ``QueryFilter/distance``.
public enum QueryComparator: String, Sendable, Hashable, Codable, CaseIterable {
    /// The field equals the value.
    case equals = "EQUALS"
    /// The field does not equal the value.
    case notEquals = "NOT_EQUALS"
    /// The field is less than the value.
    case lessThan = "LESS_THAN"
    /// The field is at most the value.
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    /// The field is greater than the value.
    case greaterThan = "GREATER_THAN"
    /// The field is at least the value.
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    /// The string field starts with the value.
    case beginsWith = "BEGINS_WITH"
    /// The field equals one of the list value's elements.
    case `in` = "IN"
    /// The list field contains the value.
    case listContains = "LIST_CONTAINS"
    /// The field equals none of the list value's elements.
    case notIn = "NOT_IN"
    /// The string field does not start with the value.
    case notBeginsWith = "NOT_BEGINS_WITH"
    /// The list field does not contain the value.
    case notListContains = "NOT_LIST_CONTAINS"
    /// The string field holds every word of the value.
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    /// The string field holds at least one word of the value.
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    /// Some element of the string list field starts with the value.
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    /// No element of the string list field starts with the value.
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"
    /// The list field holds at least one of the list value's elements.
    case listContainsAny = "LIST_CONTAINS_ANY"
    /// The list field holds every element of the list value.
    case listContainsAll = "LIST_CONTAINS_ALL"
    /// The location field lies within ``QueryFilter/distance`` metres of the location value.
    case near = "NEAR"
}

/// One condition of a query: `fieldName comparator fieldValue`.
public struct QueryFilter: Sendable, Hashable {
    /// The field compared.
    public var fieldName: String
    /// How it is compared.
    public var comparator: QueryComparator
    /// What it is compared with.
    public var fieldValue: FieldValue
    /// The radius of a `NEAR` filter, in metres (the wire's `distance`);
    /// `nil` for every other comparator.
    public var distance: Double?

    /// Creates a filter.
    public init(_ fieldName: String, _ comparator: QueryComparator, _ fieldValue: FieldValue, distance: Double? = nil) {
        self.fieldName = fieldName
        self.comparator = comparator
        self.fieldValue = fieldValue
        self.distance = distance
    }

    /// A `NEAR` filter: the location field lies within `meters` of `location`.
    ///
    /// ```swift
    /// let nearby = QueryFilter.near("place", Location(latitude: 48.8566, longitude: 2.3522), within: 5_000)
    /// ```
    public static func near(_ fieldName: String, _ location: Location, within meters: Double) -> QueryFilter {
        QueryFilter(fieldName, .near, .location(location), distance: meters)
    }
}

/// One key of a query's order.
public struct QuerySort: Sendable, Hashable {
    /// The field to order by.
    public var fieldName: String
    /// Whether smaller values come first.
    public var ascending: Bool
    /// For a location field, the place whose distance orders the records
    /// (the wire's `relativeLocation`): nearest first when ascending.
    public var relativeLocation: Location?

    /// Creates a sort key.
    public init(_ fieldName: String, ascending: Bool = true) {
        self.fieldName = fieldName
        self.ascending = ascending
    }

    /// Orders records by the distance of their location field from `location`.
    public init(_ fieldName: String, distanceFrom location: Location, ascending: Bool = true) {
        self.fieldName = fieldName
        self.ascending = ascending
        relativeLocation = location
    }
}

/// A `records/query` request: records of one type that pass every filter, in order.
public struct RecordQuery: Sendable, Hashable {
    /// The record type to search.
    public var recordType: String
    /// Conditions that every result meets.
    public var filters: [QueryFilter]
    /// The order of the results; by record name when empty.
    public var sort: [QuerySort]

    /// Creates a query.
    public init(recordType: String, filters: [QueryFilter] = [], sort: [QuerySort] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sort = sort
    }
}

/// A page of query results.
public struct QueryResult: Sendable, Hashable {
    /// The records of this page.
    public var records: [Record]
    /// Where the next page starts, when there is one.
    public var continuationMarker: String?

    /// Creates a page.
    public init(records: [Record], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}

/// What to fetch from one zone in a `changes/zone` request.
public struct ZoneChangesRequest: Sendable, Hashable {
    /// The zone.
    public var zoneID: ZoneID
    /// Where the last fetch ended; `nil` fetches the zone from its beginning.
    public var syncToken: SyncToken?
    /// The most records to return; the server's default is 200.
    public var resultsLimit: Int?
    /// The fields to return, or `nil` for all.
    public var desiredKeys: [String]?
    /// The record types to return, or `nil` for all.
    public var desiredRecordTypes: [String]?

    /// Creates a request.
    public init(
        zoneID: ZoneID, syncToken: SyncToken? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        desiredRecordTypes: [String]? = nil
    ) {
        self.zoneID = zoneID
        self.syncToken = syncToken
        self.resultsLimit = resultsLimit
        self.desiredKeys = desiredKeys
        self.desiredRecordTypes = desiredRecordTypes
    }
}

/// The changes of one zone since a sync token.
public struct ZoneChanges: Sendable, Hashable {
    /// The zone.
    public var zoneID: ZoneID
    /// Changed records (`.record`) and deletions (`.deleted`), oldest change first.
    public var records: [RecordResult]
    /// Where this page ends: pass it to the next fetch.
    public var syncToken: SyncToken
    /// Whether more changes follow this page.
    public var moreComing: Bool

    /// Creates a page of changes.
    public init(zoneID: ZoneID, records: [RecordResult], syncToken: SyncToken, moreComing: Bool) {
        self.zoneID = zoneID
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// The changes of the zones of a database since a sync token.
public struct DatabaseChanges: Sendable, Hashable {
    /// Zones that changed (or were created).
    public var changedZones: [ZoneID]
    /// Zones that were deleted.
    public var deletedZones: [ZoneID]
    /// Where this page ends.
    public var syncToken: SyncToken
    /// Whether more follow.
    public var moreComing: Bool

    /// Creates a page of database changes.
    public init(changedZones: [ZoneID], deletedZones: [ZoneID], syncToken: SyncToken, moreComing: Bool) {
        self.changedZones = changedZones
        self.deletedZones = deletedZones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// A record zone as the server describes it.
public struct RecordZone: Sendable, Hashable {
    /// The zone's identity.
    public var zoneID: ZoneID
    /// The zone's current position in its change history.
    public var syncToken: SyncToken?

    /// Creates a zone description.
    public init(zoneID: ZoneID, syncToken: SyncToken? = nil) {
        self.zoneID = zoneID
        self.syncToken = syncToken
    }
}

/// One operation of a `zones/modify` request.
public enum ZoneOperation: Sendable, Hashable {
    /// Creates the zone (creating one that exists succeeds and changes nothing).
    case create(ZoneID)
    /// Deletes the zone and every record in it.
    case delete(ZoneID)
}

/// The outcome of one zone in a zones request.
public enum ZoneResult: Sendable, Hashable {
    /// The zone exists (or was created).
    case zone(RecordZone)
    /// The zone was deleted.
    case deleted(ZoneID)
    /// This zone failed.
    case failure(CloudError)
}

/// A standing request to be told about changes: to a zone's records, or
/// to the records of a zone that match a query.
///
/// ```swift
/// let posts = Subscription(
///     subscriptionID: "new-posts", query: RecordQuery(recordType: "Post"), firesOn: [.created])
/// _ = try await publicDatabase.modifySubscriptions([.save(posts)])
/// ```
public struct Subscription: Sendable, Hashable {
    /// The subscription's identifier, chosen by the client.
    public var subscriptionID: String
    /// The zone watched: all of it, or the records in it that match the query.
    public var zoneID: ZoneID
    /// What the subscription watches.
    public var kind: SubscriptionKind

    /// Creates a zone subscription: told when any record of the zone changes.
    public init(subscriptionID: String, zoneID: ZoneID) {
        self.subscriptionID = subscriptionID
        self.zoneID = zoneID
        self.kind = .zone
    }

    /// Creates a query subscription: told of each record of the zone that
    /// matches the query's record type and filters (its sort is ignored)
    /// when it is created, updated or deleted, as `firesOn` asks.
    public init(
        subscriptionID: String, query: RecordQuery,
        firesOn: Set<QueryNotification.Reason> = Set(QueryNotification.Reason.allCases),
        zoneID: ZoneID = .defaultZone
    ) {
        self.subscriptionID = subscriptionID
        self.zoneID = zoneID
        self.kind = .query(query, firesOn: firesOn)
    }
}

/// What a ``Subscription`` watches (the wire's `subscriptionType`).
public enum SubscriptionKind: Sendable, Hashable {
    /// Every change of the zone's records: ``CloudNotification/zoneChanged(_:subscriptionID:)``.
    case zone
    /// Each record of the query's type that passes its filters, for the
    /// changes `firesOn` names: ``CloudNotification/queryChanged(_:)``.
    case query(RecordQuery, firesOn: Set<QueryNotification.Reason>)
}

/// One operation of a `subscriptions/modify` request.
public enum SubscriptionOperation: Sendable, Hashable {
    /// Creates or replaces the subscription.
    case save(Subscription)
    /// Deletes the subscription with this identifier.
    case delete(String)
}

/// The outcome of one subscription in a subscriptions request.
public enum SubscriptionResult: Sendable, Hashable {
    /// The subscription as saved or found.
    case subscription(Subscription)
    /// The subscription was deleted.
    case deleted(String)
    /// This subscription failed.
    case failure(CloudError)
}

/// A user, as `users/current` and the user lookups answer.
public struct UserIdentity: Sendable, Hashable, Codable {
    /// The user's record name, stable for the user's lifetime.
    public var userRecordName: String
    /// How the user was found: a lookup by email address answers the
    /// address it was asked with, never one it was not.
    public var lookupInfo: UserLookupInfo?
    /// The user's name, when the server knows it.
    public var nameComponents: UserNameComponents?

    /// Creates an identity.
    public init(
        userRecordName: String, lookupInfo: UserLookupInfo? = nil, nameComponents: UserNameComponents? = nil
    ) {
        self.userRecordName = userRecordName
        self.lookupInfo = lookupInfo
        self.nameComponents = nameComponents
    }
}

/// Who a database's requests act as, as one `users/current` found: the
/// user, and the generation of the database's credentials it was asked
/// with. A database bound to a check (``CloudDatabase/bound(to:)``)
/// refuses to send a request once its credentials changed since.
public struct AccountCheck: Sendable, Hashable {
    /// The signed-in user.
    public var user: UserIdentity
    /// The database's count of account changes when the check was made.
    public var generation: UInt64

    /// Creates a check.
    public init(user: UserIdentity, generation: UInt64) {
        self.user = user
        self.generation = generation
    }
}

/// Something changed on the server that a client may want to fetch.
public enum CloudNotification: Sendable, Hashable {
    /// Records in this zone changed (a zone subscription fired).
    case zoneChanged(ZoneID, subscriptionID: String?)
    /// A record that matches a query subscription was created, updated or deleted.
    case queryChanged(QueryNotification)
    /// The database's zones changed.
    case databaseChanged
    /// The signed-in account changed: signed out, or another user signed
    /// in; or the server stopped accepting the credentials the channel was
    /// opened with (a revoked token, a removed or blocked user, an issuer
    /// no longer trusted), so the account is worth checking again.
    case accountChanged
}

/// Whether there is a user to sync for.
public enum AccountStatus: Sendable, Hashable {
    /// A user is signed in and the database can be used.
    case available
    /// No user is signed in (the server asked for one:
    /// `AUTHENTICATION_REQUIRED`).
    case noAccount
    /// The server refused the credentials (`AUTHENTICATION_FAILED`): a
    /// wrong API token or container, or a sign-in that is no longer valid.
    /// A setup mistake or an expired sign-in, not a sign-out.
    case credentialsRefused
    /// The user may not use the database (`ACCESS_DENIED`: parental
    /// controls, policy).
    case restricted
    /// The account cannot be reached right now: offline, throttled, or the
    /// server busy or failing. Syncing goes on trying.
    case temporarilyUnavailable
    /// The server's answer did not say.
    case couldNotDetermine

    /// The status a failed `users/current` implies: the one rule every
    /// database and the engine use.
    public init(after error: CloudError) {
        switch error.code {
        case .authenticationRequired: self = .noAccount
        case .authenticationFailed: self = .credentialsRefused
        case .accessDenied: self = .restricted
        default: self = error.isTransient ? .temporarilyUnavailable : .couldNotDetermine
        }
    }
}
