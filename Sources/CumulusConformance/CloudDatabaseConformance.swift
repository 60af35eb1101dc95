import Cumulus
import CumulusTesting
import Testing

/// The behaviour every ``CloudDatabase`` must have, written once against
/// `any CloudDatabase` and run against every backend.
///
/// The suite ships as the `CumulusConformance` library so that every
/// backend's tests (the in-memory server's here, the record server's in its
/// own package) run the same checks. A backend's test suite runs each check
/// on a fresh backend:
///
/// ```swift
/// @Test(arguments: CloudDatabaseConformance.checks)
/// func conforms(_ check: CloudDatabaseConformance.Check) async throws {
///     try await check.run(on: InMemoryBackend())
/// }
/// ```
public struct CloudDatabaseConformance: Sendable {
    /// One check: a name for the test report, and its body.
    public struct Check: Sendable, CustomTestStringConvertible {
        /// What the check checks, as the test report shows it.
        public let name: String
        let body: @Sendable (CloudDatabaseConformance) async throws -> Void

        init(_ name: String, _ body: @escaping @Sendable (CloudDatabaseConformance) async throws -> Void) {
            self.name = name
            self.body = body
        }

        /// The name, for the test report.
        public var testDescription: String { name }

        /// Runs the check against `backend`, recording issues for what does not conform.
        public func run(on backend: any ConformanceBackend) async throws {
            try await body(CloudDatabaseConformance(backend: backend))
        }
    }

    let backend: any ConformanceBackend

    /// A device of `user` on the private database.
    func device(_ user: String = "alice") async throws -> any CloudDatabase {
        try await backend.database(signedInAs: user)
    }

    /// Returns once the recorders' streams listen (see
    /// ``CloudDatabase/notificationChannelsOpened()``), so that the check's
    /// next write is heard.
    func listening(_ recorders: NotificationRecorder...) async {
        for recorder in recorders { await recorder.database.notificationChannelsOpened() }
    }

    /// A device of `user` on the private database, with the notes zone created.
    func deviceWithZone(_ user: String = "alice") async throws -> any CloudDatabase {
        let database = try await device(user)
        try await database.makeZone()
        return database
    }

    /// Every check.
    public static let checks: [Check] =
        recordChecks + queryChecks + listAndPlaceQueryChecks + changeChecks + zoneChecks + notificationChecks
        + userChecks + faultChecks + nameChecks + sharingChecks + addressChecks + displayNameChecks + assetChecks
        + referenceChecks + publicChecks

    static let recordChecks: [Check] = [
        Check("create stores the record with server metadata") { try await $0.createStoresServerMetadata() },
        Check("create without a name gets one from the server") { try await $0.createAssignsMissingName() },
        Check("create of an existing record answers EXISTS") { try await $0.createExistingAnswersExists() },
        Check("the change tag changes on every write") { try await $0.changeTagChangesOnEveryWrite() },
        Check("update merges the fields sent") { try await $0.updateMergesFields() },
        Check("replace replaces every field") { try await $0.replaceReplacesFields() },
        Check("update clears the fields it names and keeps every other") { try await $0.updateClearsFields() },
        Check("forceUpdate clears the fields it names") { try await $0.forceUpdateClearsFields() },
        Check("a field both sent and cleared is a BAD_REQUEST") { try await $0.sentAndClearedIsRefused() },
        Check("clearing with a stale change tag answers CONFLICT") { try await $0.clearingWithStaleTagConflicts() },
        Check("the size limit counts the record without its cleared fields") {
            try await $0.clearingFreesRoomUnderTheSizeLimit()
        },
        Check("zone changes, queries and query subscriptions see a cleared field gone") {
            try await $0.clearedFieldsReachChangesQueriesAndSubscriptions()
        },
        Check("a stale or missing change tag answers CONFLICT with the server record") {
            try await $0.staleChangeTagConflicts()
        },
        Check("update, replace and delete of a missing record answer NOT_FOUND") {
            try await $0.missingRecordIsNotFound()
        },
        Check("force operations ignore the change tag") { try await $0.forceOperationsIgnoreChangeTag() },
        Check("forceUpdate and forceReplace create missing records") { try await $0.forceSavesCreate() },
        Check("delete needs only the name and change tag") { try await $0.deleteNeedsOnlyNameAndTag() },
        Check("modify answers only the desired keys") { try await $0.modifyHonoursDesiredKeys() },
        Check("an atomic batch with a failure applies nothing") { try await $0.atomicFailureAppliesNothing() },
        Check("a non-atomic batch applies each operation on its own") { try await $0.nonAtomicAppliesEach() },
        Check("atomic has no effect in the default zone") { try await $0.atomicIgnoredInDefaultZone() },
        Check("a missing zone answers ZONE_NOT_FOUND") { try await $0.missingZoneIsZoneNotFound() },
        Check("more than 200 operations is a BAD_REQUEST") { try await $0.tooManyOperationsIsBadRequest() },
        Check("a record over 1 MB is refused") { try await $0.recordOverSizeLimitIsRefused() },
        Check("two operations on one record is a BAD_REQUEST") { try await $0.duplicateRecordIsBadRequest() },
        Check("a record of another zone is a BAD_REQUEST") { try await $0.recordOfAnotherZoneIsBadRequest() },
        Check("a record's type cannot change") { try await $0.recordTypeCannotChange() },
        Check("operations apply in order") { try await $0.operationsApplyInOrder() },
        Check("VALIDATE references must point at existing records") { try await $0.validateReferences() },
        Check("deleting a record deletes its DELETE_SELF referrers") { try await $0.deleteSelfReferences() },
        Check("lookup answers in order, NOT_FOUND for missing records") { try await $0.lookupAnswersInOrder() },
    ]

    static let queryChecks: [Check] = [
        Check("query filters with every comparator") { try await $0.queryComparators() },
        Check("query filters with NOT_IN, NOT_BEGINS_WITH and NOT_LIST_CONTAINS") {
            try await $0.queryNegatedComparators()
        },
        Check("query matches words with the token comparators") { try await $0.queryTokens() },
        Check("query filters and sorts by record name and users") { try await $0.querySystemFieldNames() },
        Check("query filters and sorts by creation and modification times") {
            try await $0.querySystemFieldTimes()
        },
        Check("query matches fields of the filter's type only") { try await $0.queryMatchesSameTypeOnly() },
        Check("query refuses comparisons it cannot make") { try await $0.queryRefusesBadComparisons() },
        Check("query sorts by fields") { try await $0.querySorts() },
        Check("query pages with a continuation marker") { try await $0.queryPages() },
        Check("query honours the record type and desired keys") { try await $0.queryTypeAndDesiredKeys() },
    ]

    static let changeChecks: [Check] = [
        Check("zone changes from the start return every record") { try await $0.zoneChangesFromStart() },
        Check("zone changes since a token: latest states and tombstones") { try await $0.zoneChangesSinceToken() },
        Check("zone changes page with moreComing") { try await $0.zoneChangesPaging() },
        Check("zone changes honour record types and desired keys") { try await $0.zoneChangesFilters() },
        Check("zone changes fail per zone") { try await $0.zoneChangesFailPerZone() },
        Check("a recreated zone expires its old tokens") { try await $0.recreatedZoneExpiresTokens() },
        Check("the public database has no database change history") {
            try await $0.publicDatabaseHasNoDatabaseChanges()
        },
        Check("database changes list changed and deleted zones") { try await $0.databaseChanges() },
        Check("database changes page with moreComing") { try await $0.databaseChangesPaging() },
    ]

    static let zoneChecks: [Check] = [
        Check("zones list and lookup") { try await $0.zonesListAndLookup() },
        Check("zone create is idempotent") { try await $0.zoneCreateIsIdempotent() },
        Check("zone delete removes the zone's records") { try await $0.zoneDeleteRemovesRecords() },
        Check("the default zone cannot be deleted") { try await $0.defaultZoneCannotBeDeleted() },
        Check("zones can be created in the private database only") { try await $0.zonesOnlyInPrivateDatabase() },
        Check("subscriptions save, list, look up and delete") { try await $0.subscriptionsLifecycle() },
        Check("a subscription needs an existing zone") { try await $0.subscriptionNeedsZone() },
    ]

    static let notificationChecks: [Check] = [
        Check("notifications reach every device of the user") { try await $0.notificationsReachEveryDevice() },
        Check("zone notifications only for subscribed zones") { try await $0.notificationsOnlyForSubscribedZones() },
        Check("each notifications() call is a new stream") { try await $0.eachCallIsANewStream() },
        Check("notifications stay with their user") { try await $0.notificationsAreIsolated() },
        Check("zone creation and deletion notify") { try await $0.zoneChangesNotify() },
    ]

    static let userChecks: [Check] = [
        Check("the current user is the signed-in user") { try await $0.currentUserIsSignedInUser() },
        Check("private databases are isolated") { try await $0.privateDatabasesAreIsolated() },
        Check("the public database is shared, each record owned by its creator") {
            try await $0.publicDatabaseIsShared()
        },
        Check("the shared database is empty") { try await $0.sharedDatabaseIsEmpty() },
    ]

    static let nameChecks: [Check] = [
        Check("a name holding U+0000 is refused") { try await $0.namesWithNULAreRefused() },
        Check("a name holding U+0000 cannot reach another user's public record") {
            try await $0.nulNameCannotReachAnotherUsersPublicRecord()
        },
        Check("record names are exact bytes") { try await $0.recordNamesAreExactBytes() },
        Check("zone names are exact bytes") { try await $0.zoneNamesAreExactBytes() },
        Check("field names and record types are exact bytes") { try await $0.fieldNamesAndTypesAreExactBytes() },
        Check("subscription identifiers are exact bytes") { try await $0.subscriptionIdentifiersAreExactBytes() },
        Check("a value must have its field's type, whoever typed it first") {
            try await $0.typedValuesMustMatchTheSchema()
        },
    ]

    static let faultChecks: [Check] = [
        Check("throttling throws THROTTLED with retryAfter") { try await $0.throttling() },
        Check("a network failure before the request applies nothing") { try await $0.networkFailureBefore() },
        Check("a lost acknowledgement applies the write") { try await $0.lostAcknowledgement() },
        Check("TRY_AGAIN_LATER and INTERNAL_ERROR") { try await $0.transientServerErrors() },
        Check("a zone deleted behind the client's back") { try await $0.zoneDeletedBehindTheBack() },
        Check("expired change tokens answer CHANGE_TOKEN_EXPIRED") { try await $0.expiredChangeTokens() },
        Check("sign out and switch user") { try await $0.signOutAndSwitchUser() },
        Check("a full quota refuses saves but not deletes") { try await $0.quotaExceeded() },
    ]
}
