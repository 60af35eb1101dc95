import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// The run's decisions, as a plain value: each event in, the actions out.
/// No tasks, no clocks, no server.
@Suite("SyncSession")
struct SyncSessionTests {
    typealias Session = SyncSession<Note>
    typealias Action = Session.Action

    let zone = ZoneID(zoneName: "Note")

    /// A source of numbers in 0..<1 that repeats `values`.
    final class Numbers: @unchecked Sendable {
        // Safety: only the test's one task calls it.
        private var values: [Double]
        private var index = 0
        init(_ values: [Double]) { self.values = values }
        func next() -> Double {
            defer { index += 1 }
            return values[index % values.count]
        }
    }

    func session(
        pending: [String] = [], server: [String] = [], user: String? = nil, zoneReady: Bool = false,
        batchSize: Int = 100, attempts: Int = 4, random: Numbers = Numbers([0.5])
    ) throws -> Session {
        var replica = Replica<Note>(
            settings: .init(
                zoneID: zone, encoder: RecordEncoder(zoneID: zone), maximumConflictAttempts: 5, earlierVersionLimit: 4,
                random: random.next))
        var effects = ReplicaEffects<Note>()
        for name in server {
            var record = try RecordEncoder(zoneID: zone).encode(Note(id: name, title: name, body: ""))
            record.metadata = RecordMetadata(changeTag: "1", zoneID: zone)
            try replica.setServer(name, record, &effects)
        }
        _ = replica.upload(try replica.prepare(pending.map { Note(id: $0, title: $0, body: "") }))
        _ = replica.updateMeta {
            $0.user = user
            $0.zoneReady = zoneReady
        }
        let policy = RetryPolicy(
            initialDelay: .seconds(1), maximumDelay: .seconds(8), multiplier: 2, jitter: 0, maximumAttempts: attempts)
        return Session(
            replica: replica,
            settings: .init(batchSize: batchSize, fetchResultsLimit: nil, retryPolicy: policy, random: random.next))
    }

    /// The request or wait that ends a list of actions.
    func last(_ actions: [Action]) -> Action? { actions.last }

    func isCheckAccount(_ actions: [Action]) -> Bool {
        if case .checkAccount? = actions.last { return true }
        return false
    }

    func sentOperations(_ actions: [Action]) -> [RecordOperation]? {
        if case .send(let operations)? = actions.last { return operations }
        return nil
    }

    func waited(_ actions: [Action]) -> Duration? {
        if case .wait(let delay)? = actions.last { return delay }
        return nil
    }

    func finished(_ actions: [Action]) -> CloudError?? {
        if case .finish(let error)? = actions.last { return .some(error) }
        return nil
    }

    func fetchRequest(_ actions: [Action]) -> ZoneChangesRequest? {
        if case .fetch(let request, _)? = actions.last { return request }
        return nil
    }

    func persisted(_ actions: [Action]) -> [ReplicaEffects<Note>] {
        actions.compactMap {
            if case .persist(let effects) = $0 { return effects }
            if case .persistBehind(let effects) = $0 { return effects }
            return nil
        }
    }

    let alice = AccountCheck(user: UserIdentity(userRecordName: "_alice"), generation: 1)

    /// Runs a session with nothing pending up to its first fetch.
    func toFetch(_ session: inout Session) -> [Action] {
        var actions = session.start()
        #expect(isCheckAccount(actions))
        actions = session.handle(.accountChecked(.success(alice)))
        return actions
    }

    @Test("transient failures wait with backoff until the attempts run out; progress starts the count again")
    func retryAndBackoff() throws {
        var session = try session(user: "_alice", zoneReady: true, attempts: 3)
        var actions = session.start()
        let offline = CloudError(.networkFailure, reason: "offline")
        actions = session.handle(.accountChecked(.failure(offline)))
        #expect(actions.contains { if case .status(.temporarilyUnavailable) = $0 { true } else { false } })
        #expect(waited(actions) == .seconds(1))
        #expect(session.handle(.woke).last.map { if case .checkAccount = $0 { true } else { false } } == true)
        actions = session.handle(.accountChecked(.failure(offline)))
        #expect(waited(actions) == .seconds(2))
        _ = session.handle(.woke)
        // Three attempts in all: the third failure ends the run.
        actions = session.handle(.accountChecked(.failure(offline)))
        #expect(finished(actions) == .some(offline))
        #expect(!session.isRunning)

        // A server that asks for a longer wait gets it.
        actions = session.start()
        var throttled = CloudError(.throttled, reason: "slow down")
        throttled.retryAfter = .seconds(30)
        actions = session.handle(.accountChecked(.failure(throttled)))
        #expect(waited(actions) == .seconds(30))

        // A refusal for good ends the run at once.
        _ = session.handle(.woke)
        let refused = CloudError(.authenticationFailed, reason: "who are you")
        actions = session.handle(.accountChecked(.failure(refused)))
        #expect(actions.contains { if case .status(.credentialsRefused) = $0 { true } else { false } })
        #expect(finished(actions) == .some(refused))
    }

    @Test("a run started with fewer attempts gives up at its limit; the policy's runs are unchanged")
    func attemptLimit() throws {
        var session = try session(user: "_alice", zoneReady: true, attempts: 3)
        _ = session.start(maximumAttempts: 1)
        let offline = CloudError(.networkFailure, reason: "offline")
        #expect(finished(session.handle(.accountChecked(.failure(offline)))) == .some(offline))
        _ = session.start()
        #expect(waited(session.handle(.accountChecked(.failure(offline)))) == .seconds(1))
    }

    @Test("callers waiting for the run with an attempt limit are let go at their limit; the run goes on")
    func waitersReleased() throws {
        var session = try session(user: "_alice", zoneReady: true, attempts: 8)
        _ = session.start()
        let offline = CloudError(.networkFailure, reason: "offline")
        // Mid-attempt: the callers wait.
        #expect(session.wait(caller: 1, attempts: 1) == nil)
        #expect(session.wait(caller: 2, attempts: 2) == nil)
        #expect(session.wait(caller: 3, attempts: 3) == nil)
        session.stopWaiting(caller: 3)
        var actions = session.handle(.accountChecked(.failure(offline)))
        #expect(actions.contains { if case .release([1], offline) = $0 { true } else { false } })
        #expect(waited(actions) == .seconds(1))
        // While the run waits out a failure, that failure counts as one attempt.
        #expect(session.wait(caller: 4, attempts: 1) == offline)
        #expect(session.wait(caller: 5, attempts: 2) == nil)
        _ = session.handle(.woke)
        actions = session.handle(.accountChecked(.failure(offline)))
        #expect(actions.contains { if case .release([2, 5], offline) = $0 { true } else { false } })
        #expect(session.waiters.isEmpty)
        #expect(waited(actions) == .seconds(2))
        // The end of the run lets go of everyone.
        #expect(session.wait(caller: 6, attempts: 5) == nil)
        _ = session.stopped()
        #expect(session.waiters.isEmpty)
    }

    @Test("the first complete fetch is made durable and told once, never again")
    func firstFetch() throws {
        var session = try session(user: "_alice", zoneReady: true)
        var actions = toFetch(&session)
        let page = ZoneChanges(zoneID: zone, records: [], syncToken: SyncToken(rawValue: "t1"), moreComing: true)
        actions = session.handle(.fetched(.success(page), prepared: []))
        #expect(!actions.contains { if case .firstFetchCompleted = $0 { true } else { false } })
        #expect(!session.replica.meta.fetched)
        let last = ZoneChanges(zoneID: zone, records: [], syncToken: SyncToken(rawValue: "t2"), moreComing: false)
        actions = session.handle(.fetched(.success(last), prepared: []))
        let told = actions.firstIndex { if case .firstFetchCompleted = $0 { true } else { false } }
        let durable = actions.firstIndex {
            if case .persist(let effects) = $0 { !effects.journal.isEmpty } else { false }
        }
        let settled = actions.firstIndex { if case .settleJournal = $0 { true } else { false } }
        #expect(try #require(settled) < #require(durable))
        #expect(try #require(durable) < #require(told))
        #expect(session.replica.meta.fetched)
        #expect(try EngineMeta(json: session.replica.meta.json()).fetched)

        actions = toFetch(&session)
        actions = session.handle(.fetched(.success(last), prepared: []))
        #expect(!actions.contains { if case .firstFetchCompleted = $0 { true } else { false } })
    }

    @Test("a pass that applied a page starts the count of attempts again")
    func progressResetsBackoff() throws {
        var session = try session(user: "_alice", zoneReady: true, attempts: 2)
        let lost = CloudError(.networkFailure, reason: "lost")
        var actions = toFetch(&session)
        #expect(fetchRequest(actions) != nil)
        // Two passes that each applied a page before failing: each waits the first delay.
        for index in 0..<2 {
            let token = SyncToken(rawValue: "t\(index)")
            let page = ZoneChanges(zoneID: zone, records: [], syncToken: token, moreComing: true)
            actions = session.handle(.fetched(.success(page), prepared: []))
            #expect(fetchRequest(actions)?.syncToken == token)
            actions = session.handle(.fetched(.failure(lost), prepared: []))
            #expect(waited(actions) == .seconds(1))
            _ = session.handle(.woke)
            actions = session.handle(.accountChecked(.success(alice)))
        }
        // A pass without progress: with two attempts, its failure ends the run.
        actions = session.handle(.fetched(.failure(lost), prepared: []))
        #expect(finished(actions) == .some(lost))
    }

    @Test("a batch the server refuses as too large is halved, down to one change")
    func batchHalving() throws {
        var session = try session(pending: ["a", "b", "c", "d", "e"], user: "_alice", zoneReady: true, batchSize: 4)
        _ = session.start()
        var actions = session.handle(.accountChecked(.success(alice)))
        #expect(sentOperations(actions)?.count == 4)
        // Each pending change is in doubt in the journal already, with its write identifier.
        #expect(persisted(actions).allSatisfy { $0.journal.isEmpty }, "sending writes nothing")
        let tooLarge = CloudError(.badRequest, reason: "request too large")
        for expected in [2, 1] {
            actions = session.handle(.sent(.failure(tooLarge)))
            #expect(sentOperations(actions)?.count == expected)
        }
        // A single change refused as a whole ends the run.
        actions = session.handle(.sent(.failure(tooLarge)))
        #expect(finished(actions) == .some(tooLarge))
    }

    @Test("a zone gone from the server is created again after the account is checked, and sending goes on")
    func zoneRecreation() throws {
        var session = try session(pending: ["a"], server: ["b"], user: "_alice", zoneReady: true)
        _ = session.start()
        var actions = session.handle(.accountChecked(.success(alice)))
        #expect(sentOperations(actions)?.count == 1)
        actions = session.handle(.sent(.failure(CloudError(.zoneNotFound, reason: "gone"))))
        #expect(isCheckAccount(actions), "the account is checked before anything is queued again")
        actions = session.handle(.accountChecked(.success(alice)))
        guard case .createZone(let created, _)? = actions.last else {
            Issue.record("the zone is not created again: \(actions)")
            return
        }
        #expect(created == zone)
        // The server's records are queued to be sent again.
        #expect(session.replica.pending.keys.sorted() == ["a", "b"])
        actions = session.handle(.zoneCreated(.success(())))
        #expect(session.replica.meta.zoneReady)
        #expect(sentOperations(actions)?.map(\.record.recordName).sorted() == ["a", "b"])
    }

    @Test("an expired token fetches the whole zone again and removes what the server no longer has")
    func tokenExpiry() throws {
        var session = try session(server: ["kept", "gone"], user: "_alice", zoneReady: true)
        _ = session.replica.updateMeta { $0.syncToken = SyncToken(rawValue: "old") }
        var actions = toFetch(&session)
        #expect(fetchRequest(actions)?.syncToken == SyncToken(rawValue: "old"))
        actions = session.handle(
            .fetched(.failure(CloudError(.changeTokenExpired, reason: "expired")), prepared: []))
        #expect(actions.contains { if case .publish(.fullRefetch) = $0 { true } else { false } })
        #expect(fetchRequest(actions)?.syncToken == nil)
        var record = try RecordEncoder(zoneID: zone).encode(Note(id: "kept", title: "kept", body: ""))
        record.metadata = RecordMetadata(changeTag: "1", zoneID: zone)
        let page = ZoneChanges(
            zoneID: zone, records: [.record(record)], syncToken: SyncToken(rawValue: "new"), moreComing: false)
        actions = session.handle(.fetched(.success(page), prepared: [nil]))
        #expect(persisted(actions).flatMap(\.deleted) == ["gone"])
        #expect(session.replica.server.keys.sorted() == ["kept"])
        #expect(session.replica.meta.syncToken == SyncToken(rawValue: "new"))
        #expect(actions.contains { if case .settleJournal = $0 { true } else { false } })
        #expect(finished(actions) == .some(nil))

        // A second expiry during the refetch is a failure, not a loop.
        _ = session.replica.updateMeta { $0.syncToken = SyncToken(rawValue: "old") }
        actions = toFetch(&session)
        let expired = CloudError(.changeTokenExpired, reason: "expired")
        _ = session.handle(.fetched(.failure(expired), prepared: []))
        actions = session.handle(.fetched(.failure(expired), prepared: []))
        #expect(finished(actions) == .some(expired))
    }

    @Test("another user signed in mid-run: the replica is cleared and the pass starts again as that user")
    func accountChangeMidRun() throws {
        var session = try session(pending: ["a"], user: "_alice", zoneReady: true)
        _ = session.start()
        var actions = session.handle(.accountChecked(.success(alice)))
        #expect(sentOperations(actions)?.count == 1)
        // The database refused the batch: its account changed after the check.
        actions = session.handle(.sent(.failure(CloudError(.accountChanged, reason: "switched"))))
        #expect(isCheckAccount(actions), "the pass starts again with a check")
        #expect(!actions.contains { if case .wait = $0 { true } else { false } }, "without a wait")
        actions = session.handle(
            .accountChecked(.success(AccountCheck(user: UserIdentity(userRecordName: "_bob"), generation: 2))))
        #expect(sentOperations(actions) == nil, "nothing of alice's is sent as bob")
        #expect(session.replica.pending.isEmpty)
        #expect(session.replica.meta.user == "_bob")
        #expect(persisted(actions).flatMap(\.events).contains { if case .accountChanged = $0 { true } else { false } })
    }

    @Test("a run asked for during a run passes once more; a stopped run tells whether one was asked for")
    func rerunAndStop() throws {
        var session = try session(user: "_alice", zoneReady: true)
        var startNow = session.requestRun()
        #expect(startNow)
        _ = toFetch(&session)
        startNow = session.requestRun()
        #expect(!startNow)
        let page = ZoneChanges(zoneID: zone, records: [], syncToken: SyncToken(rawValue: "t"), moreComing: false)
        var actions = session.handle(.fetched(.success(page), prepared: []))
        #expect(isCheckAccount(actions), "the asked-for pass")
        actions = session.handle(.accountChecked(.success(alice)))
        actions = session.handle(.fetched(.success(page), prepared: []))
        #expect(finished(actions) == .some(nil))
        #expect(!session.isRunning)

        _ = toFetch(&session)
        startNow = session.requestRun()
        #expect(!startNow)
        let again = session.stopped()
        #expect(again)
        #expect(!session.isRunning)
        startNow = session.requestRun()
        #expect(startNow)
    }

    @Test("a fetch that brings nothing new writes nothing to the journal")
    func idleFetchWritesNothing() throws {
        var session = try session(server: ["a"], user: "_alice", zoneReady: true)
        let token = SyncToken(rawValue: "same")
        _ = session.replica.updateMeta {
            $0.syncToken = token
            $0.fetched = true
        }
        let actions = toFetch(&session)
        #expect(fetchRequest(actions)?.syncToken == token)
        let page = ZoneChanges(zoneID: zone, records: [], syncToken: token, moreComing: false)
        let answered = session.handle(.fetched(.success(page), prepared: []))
        #expect(persisted(answered).allSatisfy { $0.journal.isEmpty }, "\(answered)")
        #expect(finished(answered) == .some(nil))
    }

    @Test("write identifiers come from the configured source: the same source gives the same batch")
    func identifiersFromTheSource() throws {
        func firstBatch() throws -> [RecordOperation]? {
            var session = try session(
                pending: ["a", "b"], user: "_alice", zoneReady: true, random: Numbers([0.25, 0.75, 0.5, 0.125]))
            _ = session.start()
            return sentOperations(session.handle(.accountChecked(.success(alice))))
        }
        let first = try #require(try firstBatch())
        let second = try #require(try firstBatch())
        #expect(first.map(\.record) == second.map(\.record))
        let identifiers = first.map { WriteLineage.identifiers(of: $0.record).first }
        #expect(identifiers == ["40000000c0000000", "8000000020000000"])
    }

    /// The check a pass's account action offers to reuse.
    func reusedCheck(_ actions: [Action]) -> AccountCheck?? {
        if case .checkAccount(let reusing)? = actions.last { return .some(reusing) }
        return nil
    }

    @Test("a pass reuses the last check; an account refusal or a failure to reach the server forgets it")
    func checkIsReused() throws {
        var session = try session(user: "_alice", zoneReady: true, attempts: 3)
        #expect(reusedCheck(session.start()) == .some(nil), "nothing to reuse yet")
        let page = ZoneChanges(zoneID: zone, records: [], syncToken: SyncToken(rawValue: "t"), moreComing: false)
        _ = session.handle(.accountChecked(.success(alice)))
        _ = session.handle(.fetched(.success(page), prepared: []))
        var actions = session.start()
        #expect(reusedCheck(actions) == .some(alice), "an idle poll: no users/current while the credentials stay")

        // The server refuses the credentials on the fetch: the status says so, the next pass asks.
        _ = session.handle(.accountChecked(.success(alice)))
        let refused = CloudError(.authenticationFailed, reason: "expired")
        actions = session.handle(.fetched(.failure(refused), prepared: []))
        #expect(actions.contains { if case .status(.credentialsRefused) = $0 { true } else { false } })
        #expect(finished(actions) == .some(refused))
        #expect(reusedCheck(session.start()) == .some(nil))

        // A transient failure: the retry asks, so that the status tells whether the server is reachable.
        _ = session.handle(.accountChecked(.success(alice)))
        actions = session.handle(.fetched(.failure(CloudError(.networkFailure, reason: "offline")), prepared: []))
        #expect(waited(actions) != nil)
        #expect(reusedCheck(session.handle(.woke)) == .some(nil))
        _ = session.handle(.accountChecked(.success(alice)))
        _ = session.handle(.fetched(.success(page), prepared: []))

        // A notification that the account changed.
        session.accountMayHaveChanged()
        #expect(reusedCheck(session.start()) == .some(nil))
    }

    @Test("a run for an upload sends and ends; a notification during it makes the next pass fetch")
    func uploadRunSendsOnly() throws {
        var session = try session(pending: ["a"], user: "_alice", zoneReady: true)
        _ = session.start(fetching: false)
        var actions = session.handle(.accountChecked(.success(alice)))
        let batch = try #require(sentOperations(actions))
        var answered = batch[0].record
        answered.metadata = RecordMetadata(changeTag: "2", zoneID: zone)
        actions = session.handle(.sent(.success([.record(answered)])))
        #expect(finished(actions) == .some(nil), "no fetch: \(actions)")

        // Notifications heard before the pass asks for changes: that fetch brings them.
        _ = session.start(fetching: false)
        var startNow = session.requestRun(fetching: true)
        #expect(!startNow)
        startNow = session.requestRun(fetching: true)
        #expect(!startNow)
        actions = session.handle(.accountChecked(.success(alice)))
        let request = try #require(fetchRequest(actions), "the pass fetches, once")
        // One heard while the fetch is under way may stand for a later change: the run passes again.
        startNow = session.requestRun(fetching: true)
        #expect(!startNow)
        let page = ZoneChanges(
            zoneID: zone, records: [], syncToken: request.syncToken ?? SyncToken(rawValue: "t"), moreComing: false)
        actions = session.handle(.fetched(.success(page), prepared: []))
        #expect(isCheckAccount(actions))
        actions = session.handle(.accountChecked(.success(alice)))
        #expect(fetchRequest(actions) != nil)
        _ = session.handle(.fetched(.success(page), prepared: []))

        // A run that fails before the fetch it stood for asks for another.
        _ = session.start(fetching: false)
        startNow = session.requestRun(fetching: true)
        #expect(!startNow)
        _ = session.handle(.accountChecked(.failure(CloudError(.authenticationRequired, reason: "signed out"))))
        #expect(!session.isRunning)
        let again = session.stopped()
        #expect(again, "another run is asked for")
    }

    @Test("in a shared zone, an expired token reads the zone's marker: the known epoch refetches, another recreates")
    func sharedZoneMarker() throws {
        for (found, recreates) in [("e1", false), ("e2", true), (nil, true)] as [(String?, Bool)] {
            var session = try session(server: ["kept"], user: "_alice", zoneReady: true)
            session.settings.marksZone = true
            _ = session.replica.updateMeta {
                $0.syncToken = SyncToken(rawValue: "old")
                $0.zoneEpoch = "e1"
            }
            _ = toFetch(&session)
            var actions = session.handle(
                .fetched(.failure(CloudError(.changeTokenExpired, reason: "expired")), prepared: []))
            guard case .readZoneMarker? = actions.last else {
                Issue.record("the marker is not read: \(actions)")
                return
            }
            actions = session.handle(.zoneMarkerRead(.success(found)))
            if !recreates {
                #expect(fetchRequest(actions)?.syncToken == nil)
                #expect(fetchRequest(actions)?.desiredRecordTypes == ["Note"])
                continue
            }
            #expect(isCheckAccount(actions))
            actions = session.handle(.accountChecked(.success(alice)))
            #expect(session.replica.pending.keys.sorted() == ["kept"], "the records are queued again")
            guard case .createZone? = actions.last else {
                Issue.record("the zone is not created: \(actions)")
                return
            }
            actions = session.handle(.zoneCreated(.success(())))
            guard case .markZone? = actions.last else {
                Issue.record("the zone is not marked: \(actions)")
                return
            }
            #expect(!session.replica.meta.zoneReady, "ready only once the epoch is known")
            actions = session.handle(.zoneMarked(.success("e3")))
            #expect(session.replica.meta.zoneEpoch == "e3")
            #expect(session.replica.meta.zoneReady)
            #expect(sentOperations(actions)?.map(\.record.recordName) == ["kept"])
        }
    }
}
