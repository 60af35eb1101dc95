import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// The public database's decisions, as a plain value: no tasks, no server.
@Suite("SyncSession on the public database")
struct PublicSessionTests {
    typealias Session = SyncSession<Post>
    typealias Action = Session.Action

    func session(pending: [String] = []) throws -> Session {
        let zone = ZoneID.defaultZone
        var replica = Replica<Post>(
            settings: .init(
                zoneID: zone, encoder: RecordEncoder(zoneID: zone), maximumConflictAttempts: 5, earlierVersionLimit: 4,
                random: { 0.5 }))
        _ = replica.upload(try replica.prepare(pending.map { Post(id: $0, text: $0) }))
        return Session(
            replica: replica,
            settings: .init(
                batchSize: 100, fetchResultsLimit: nil, retryPolicy: RetryPolicy(jitter: 0, maximumAttempts: 1),
                random: { 0.5 }, isPublic: true, now: { 1_000 }))
    }

    let signedOut = CloudError(.authenticationRequired, reason: "no user is signed in")

    func query(_ actions: [Action]) -> PublicQueryRequest? {
        if case .query(let request)? = actions.last { return request }
        return nil
    }

    @Test("with nobody signed in a pass fetches, then keeps what is queued and says why")
    func anonymousPass() throws {
        var session = try session(pending: ["mine"])
        var actions = session.start()
        guard case .checkAccount? = actions.last else {
            Issue.record("no account check: \(actions)")
            return
        }
        actions = session.handle(.accountChecked(.failure(signedOut)))
        #expect(actions.contains { if case .status(.noAccount) = $0 { true } else { false } })
        // Not sent before the fetch: the feed is asked first.
        guard case .fetch? = actions.last else {
            Issue.record("no fetch: \(actions)")
            return
        }
        // This server refuses the feed to a reader without a user: the pass queries instead.
        actions = session.handle(.fetched(.failure(signedOut), prepared: []))
        let first = try #require(query(actions))
        #expect(first.query.recordType == "Post")
        #expect(first.query.filters.isEmpty)
        actions = session.handle(.queried(.success(QueryResult(records: [], continuationMarker: nil)), prepared: []))
        guard case .finish(let error?)? = actions.last else {
            Issue.record("no failure: \(actions)")
            return
        }
        #expect(error.code == .authenticationRequired)
        #expect(session.replica.pending.keys.sorted() == ["mine"])
        _ = session.stopped()

        // The refusal holds for the session: the next pass queries at once.
        actions = session.start()
        actions = session.handle(.accountChecked(.failure(signedOut)))
        #expect(query(actions) != nil)
    }

    @Test("a feed refused as a plain CloudKit server refuses it is not asked for again")
    func feedRefusal() throws {
        var session = try session()
        _ = session.start()
        let user = AccountCheck(user: UserIdentity(userRecordName: "alice"), generation: 0)
        var actions = session.handle(.accountChecked(.success(user)))
        // The public zone is never created: only the query subscription is saved.
        guard case .createZone(_, let subscription)? = actions.last else {
            Issue.record("\(actions)")
            return
        }
        #expect(subscription.subscriptionID == "cumulus.public.Post")
        #expect(
            subscription.kind
                == .query(RecordQuery(recordType: "Post"), firesOn: Set(QueryNotification.Reason.allCases)))
        actions = session.handle(.zoneCreated(.success(())))
        guard case .fetch? = actions.last else {
            Issue.record("no fetch: \(actions)")
            return
        }
        actions = session.handle(.fetched(.failure(CloudError(.badRequest, reason: "no feed")), prepared: []))
        #expect(query(actions) != nil)
        actions = session.handle(.queried(.success(QueryResult(records: [], continuationMarker: nil)), prepared: []))
        guard case .finish(nil)? = actions.last else {
            Issue.record("not caught up: \(actions)")
            return
        }
        #expect(session.replica.meta.scanTime == 1_000)
        _ = session.stopped()

        _ = session.start()
        actions = session.handle(.accountChecked(.success(user)))
        #expect(query(actions) != nil)
    }
}
