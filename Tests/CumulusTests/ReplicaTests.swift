import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// The engine's decisions, as a plain value: no tasks, no clocks, no server.
@Suite("Replica")
struct ReplicaTests {
    let zone = ZoneID(zoneName: "Note")

    func replica(earlierVersionLimit: Int = 4) -> Replica<Note> {
        Replica(
            settings: .init(
                zoneID: zone, encoder: RecordEncoder(zoneID: zone), maximumConflictAttempts: 5,
                earlierVersionLimit: earlierVersionLimit, random: { Double.random(in: 0..<1) }))
    }

    /// The record the server would hold for `note` at change tag `tag`.
    func stored(_ note: Note, tag: String) throws -> Record {
        var record = try RecordEncoder(zoneID: zone).encode(note)
        record.metadata = RecordMetadata(changeTag: tag, zoneID: zone)
        return record
    }

    func note(_ title: String, _ body: String, tag: String?) -> Note {
        Note(id: "n", title: title, body: body, cloudMetadata: tag.map { RecordMetadata(changeTag: $0, zoneID: zone) })
    }

    @Test("a server version replaced by a fetch stays the ancestor of a copy based on it")
    func earlierVersionIsTheAncestor() throws {
        var replica = replica()
        var effects = ReplicaEffects<Note>()
        try replica.setServer("n", stored(note("Eiffel", "1", tag: "2"), tag: "2"), &effects)
        try replica.setServer("n", stored(note("Tour Eiffel", "1", tag: "3"), tag: "3"), &effects)
        #expect(replica.earlier["n"]?.map(\.tag) == ["2"])
        #expect(effects.journal.changes[JournalKeys.earlier("n")] != nil)

        let upload = try replica.prepare([note("Eiffel", "99", tag: "2")])
        effects = replica.upload(upload)
        #expect(replica.pendingModels["n"]?.title == "Tour Eiffel")
        #expect(replica.pendingModels["n"]?.body == "99")
        #expect(replica.pending["n"]?.baseTag == "3")
        #expect(effects.events == [.conflict(recordName: "n", resolution: .resolved)])
    }

    @Test("a later upload based on the version of the queued change replaces it")
    func sameBaseReplaces() throws {
        var replica = replica()
        var effects = ReplicaEffects<Note>()
        try replica.setServer("n", stored(note("A", "", tag: "1"), tag: "1"), &effects)
        _ = replica.upload(try replica.prepare([note("B", "", tag: "1")]))
        effects = replica.upload(try replica.prepare([note("A", "", tag: "1")]))
        #expect(replica.pendingModels["n"]?.title == "A")
        #expect(effects.events.isEmpty)
    }

    @Test("deleting a create that was never sent cancels it; one that was sent is deleted whatever the server holds")
    func deleteOfACreate() throws {
        var replica = replica()
        _ = replica.upload(try replica.prepare([note("A", "", tag: nil)]))
        _ = replica.delete(["n"])
        #expect(replica.pending.isEmpty)

        _ = replica.upload(try replica.prepare([note("A", "", tag: nil)]))
        let batch = replica.nextBatch(limit: 10)
        #expect(batch.map(\.operation.type) == [.create])
        _ = replica.send(batch)
        _ = replica.delete(["n"])
        #expect(replica.nextBatch(limit: 10).map(\.operation.type) == [.forceDelete])
    }

    @Test("a conflict whose server record is this device's own unanswered write is an acknowledgement")
    func ownWriteIsAnAcknowledgement() throws {
        var replica = replica()
        var effects = ReplicaEffects<Note>()
        try replica.setServer("n", stored(note("A", "", tag: "1"), tag: "1"), &effects)
        _ = replica.upload(try replica.prepare([note("B", "", tag: "1")]))
        _ = replica.send(replica.nextBatch(limit: 10))  // its answer is lost
        _ = replica.upload(try replica.prepare([note("A", "", tag: "1")]))  // the app reverts
        let resend = replica.nextBatch(limit: 10)
        _ = replica.send(resend)
        let conflict = CloudError(
            .conflict, reason: "stale", serverRecord: try stored(note("B", "", tag: "2"), tag: "2"))
        let answers = replica.apply([.failure(conflict)], for: resend)
        #expect(answers.effects.events.isEmpty)
        #expect(replica.server["n"]?.metadata?.changeTag == "2")
        #expect(replica.pending["n"]?.baseTag == "2")
        #expect(replica.pendingModels["n"]?.title == "A")
        #expect(replica.inDoubt["n"] == nil)
    }

    @Test("a create sent many times is recognised by its first send, the one that arrived")
    func firstSendIsKept() throws {
        var replica = replica()
        _ = replica.upload(try replica.prepare([note("A", "", tag: nil)]))
        let firstBatch = replica.nextBatch(limit: 10)
        _ = replica.send(firstBatch)  // it arrives; its answer is lost
        _ = replica.upload(try replica.prepare([note("B", "", tag: nil)]))
        for _ in 0..<(Replica<Note>.inDoubtLimit + 2) {
            _ = replica.send(replica.nextBatch(limit: 10))  // refused as existing; the answers are lost too
        }
        var arrived = firstBatch[0].operation.record
        arrived.metadata = RecordMetadata(changeTag: "1", zoneID: zone)
        var effects = ReplicaEffects<Note>()
        try replica.conflict("n", server: arrived, &effects)
        #expect(effects.events.isEmpty)
        #expect(replica.server["n"]?.metadata?.changeTag == "1")
        #expect(replica.pending["n"]?.baseTag == "1")
        #expect(replica.pendingModels["n"]?.title == "B")
    }

    @Test("a fetched version the replica already holds is neither written nor published again")
    func knownVersionIsNotPublishedAgain() throws {
        var replica = replica()
        var effects = ReplicaEffects<Note>()
        let record = try stored(note("A", "", tag: "1"), tag: "1")
        try replica.setServer("n", record, &effects)
        var seen: Set<String>?
        let fetched = Replica<Note>.Fetched(
            json: .success(try WireFormat.encode(record)), model: .success(note("A", "", tag: "1")))
        effects = replica.applyFetched([.record(record)], [fetched], seen: &seen)
        #expect(effects.updated.isEmpty)
        #expect(effects.journal.isEmpty)
    }

    @Test("another user signing in clears every table and reports the changes discarded")
    func switchAccount() throws {
        var replica = replica()
        var effects = replica.updateMeta { $0.user = "alice" }
        try replica.setServer("n", stored(note("A", "", tag: "1"), tag: "1"), &effects)
        _ = replica.upload(try replica.prepare([Note(id: "m", title: "queued")]))
        _ = replica.send(replica.nextBatch(limit: 10))
        effects = replica.switchAccount(to: "bob")
        #expect(replica.server.isEmpty && replica.pending.isEmpty && replica.inDoubt.isEmpty)
        #expect(replica.meta.user == "bob")
        #expect(effects.events == [.accountChanged(previousUser: "alice", newUser: "bob", discardedChanges: ["m"])])
        #expect(Set(effects.deleted) == ["m", "n"])
        #expect(effects.journal.changes[JournalKeys.sent("m")] == .some(nil))
    }
}
