import Cumulus
import CumulusTesting
import Foundation
import Testing

extension CloudDatabaseConformance {
    func createStoresServerMetadata() async throws {
        let database = try await deviceWithZone()
        let user = try await database.currentUser().userRecordName
        let sent = note("n1", ["title": .string("Groceries"), "count": .int64(3)])
        let saved = try #require(try await database.create([sent]).first)

        #expect(saved.recordName == "n1")
        #expect(saved.recordType == "Note")
        #expect(saved.fields == sent.fields)
        #expect(saved.zoneID.zoneName == notesZone.zoneName)
        let metadata = try #require(saved.metadata)
        #expect(!metadata.changeTag.isEmpty)
        #expect(metadata.zoneID.zoneName == notesZone.zoneName)
        let created = try #require(metadata.created)
        let modified = try #require(metadata.modified)
        #expect(created.userRecordName == user)
        #expect(modified.userRecordName == user)
        #expect(modified.timestamp >= created.timestamp)

        let fetched = try #require(try await database.fetch("n1"))
        #expect(fetched == saved)
    }

    func createAssignsMissingName() async throws {
        let database = try await deviceWithZone()
        let saved = try await database.create([note(""), note("")])
        #expect(saved.count == 2)
        #expect(saved.allSatisfy { !$0.recordName.isEmpty })
        #expect(Set(saved.map(\.recordName)).count == 2)
        #expect(try await database.fetch(saved[0].recordName) == saved[0])

        // Only create may leave the name out.
        expectFailure(try await database.modify(RecordOperation(.forceUpdate, note(""))), .badRequest)
    }

    func createExistingAnswersExists() async throws {
        let database = try await deviceWithZone()
        let original = try #require(try await database.create([note("n1", ["v": .int64(1)])]).first)
        let result = try await database.modify(RecordOperation(.create, note("n1", ["v": .int64(2)])))
        let error = expectFailure(result, .exists)
        #expect(error?.recordName == "n1")
        #expect(error?.serverRecord == original)
        #expect(try await database.fetch("n1") == original)
    }

    func changeTagChangesOnEveryWrite() async throws {
        let database = try await deviceWithZone()
        var record = try #require(try await database.create([note("n1", ["v": .int64(0)])]).first)
        var tags = [record.changeTag!]
        for (index, type) in [RecordOperationType.update, .forceUpdate, .replace, .forceReplace].enumerated() {
            record["v"] = .int64(Int64(index + 1))
            record = try requireRecord(try await database.modify(RecordOperation(type, record)))
            tags.append(record.changeTag!)
        }
        // A write that changes nothing still changes the tag.
        record = try requireRecord(try await database.modify(RecordOperation(.update, record)))
        tags.append(record.changeTag!)
        #expect(Set(tags).count == tags.count, "\(tags)")

        // A record deleted and created again never gets an old tag back.
        try await database.apply([RecordOperation(.delete, record)])
        let again = try #require(try await database.create([note("n1")]).first)
        #expect(!tags.contains(again.changeTag!))
    }

    func updateMergesFields() async throws {
        let database = try await deviceWithZone()
        var stored = try #require(
            try await database.create([note("n1", ["a": .string("a"), "b": .int64(1)])]).first)
        let created = stored.metadata?.created
        stored.fields = ["b": .int64(2), "c": .double(0.5)]
        let updated = try requireRecord(try await database.modify(RecordOperation(.update, stored)))
        #expect(updated.fields == ["a": .string("a"), "b": .int64(2), "c": .double(0.5)])
        #expect(updated.metadata?.created == created)
        #expect(try await database.fetch("n1") == updated)
    }

    func replaceReplacesFields() async throws {
        let database = try await deviceWithZone()
        var stored = try #require(
            try await database.create([note("n1", ["a": .string("a"), "b": .int64(1)])]).first)
        stored.fields = ["c": .stringList(["x", "y"])]
        let replaced = try requireRecord(try await database.modify(RecordOperation(.replace, stored)))
        #expect(replaced.fields == ["c": .stringList(["x", "y"])])
        #expect(try await database.fetch("n1")?.fields == ["c": .stringList(["x", "y"])])
    }

    func staleChangeTagConflicts() async throws {
        let database = try await deviceWithZone()
        let first = try #require(try await database.create([note("n1", ["v": .int64(1)])]).first)
        var second = first
        second["v"] = .int64(2)
        let current = try requireRecord(try await database.modify(RecordOperation(.update, second)))

        var stale = first
        stale["v"] = .int64(3)
        var untagged = note("n1", ["v": .int64(4)])
        untagged.metadata = nil
        for type in [RecordOperationType.update, .replace, .delete] {
            for sent in [stale, untagged] {
                let error = expectFailure(try await database.modify(RecordOperation(type, sent)), .conflict)
                #expect(error?.recordName == "n1")
                #expect(error?.serverRecord == current, "\(type)")
            }
        }
        #expect(try await database.fetch("n1") == current)
    }

    func missingRecordIsNotFound() async throws {
        let database = try await deviceWithZone()
        var ghost = note("ghost", ["v": .int64(1)])
        ghost.metadata = RecordMetadata(changeTag: "1", zoneID: notesZone)
        for type in [RecordOperationType.update, .replace, .delete, .forceDelete] {
            let error = expectFailure(try await database.modify(RecordOperation(type, ghost)), .notFound)
            #expect(error?.recordName == "ghost")
        }
        #expect(try await database.fetch("ghost") == nil)
    }

    func forceOperationsIgnoreChangeTag() async throws {
        let database = try await deviceWithZone()
        let first = try #require(
            try await database.create([note("n1", ["a": .int64(1)]), note("n2", ["a": .int64(1)])]).first)
        _ = try await database.modify(RecordOperation(.forceUpdate, note("n1", ["a": .int64(2)])))

        var stale = first
        stale.fields = ["b": .int64(3)]
        let merged = try requireRecord(try await database.modify(RecordOperation(.forceUpdate, stale)))
        #expect(merged.fields == ["a": .int64(2), "b": .int64(3)])

        stale.fields = ["c": .int64(4)]
        let replaced = try requireRecord(try await database.modify(RecordOperation(.forceReplace, stale)))
        #expect(replaced.fields == ["c": .int64(4)])

        let deleted = try await database.modify(RecordOperation(.forceDelete, stale))
        #expect(deleted == .deleted(recordName: "n1", zoneID: notesZone))
        #expect(try await database.fetch("n1") == nil)
        #expect(try await database.fetch("n2") != nil)
    }

    func forceSavesCreate() async throws {
        let database = try await deviceWithZone()
        let user = try await database.currentUser().userRecordName
        let updated = try requireRecord(
            try await database.modify(RecordOperation(.forceUpdate, note("u", ["a": .int64(1)]))))
        let replaced = try requireRecord(
            try await database.modify(RecordOperation(.forceReplace, note("r", ["b": .int64(2)]))))
        #expect(updated.fields == ["a": .int64(1)])
        #expect(replaced.fields == ["b": .int64(2)])
        #expect(updated.metadata?.created?.userRecordName == user)
        #expect(try await database.fetch("u") == updated)
        #expect(try await database.fetch("r") == replaced)
    }

    func deleteNeedsOnlyNameAndTag() async throws {
        let database = try await deviceWithZone()
        let saved = try #require(try await database.create([note("n1", ["a": .int64(1)])]).first)
        var bare = Record(recordType: "", recordName: "n1", zoneID: notesZone)
        bare.metadata = RecordMetadata(changeTag: saved.changeTag!, zoneID: notesZone)
        let result = try await database.modify(RecordOperation(.delete, bare))
        #expect(result == .deleted(recordName: "n1", zoneID: notesZone))
        #expect(try await database.fetch("n1") == nil)
        // Deleting it again: it is gone.
        expectFailure(try await database.modify(RecordOperation(.forceDelete, bare)), .notFound)
    }

    func modifyHonoursDesiredKeys() async throws {
        let database = try await deviceWithZone()
        let sent = note("n1", ["a": .int64(1), "b": .int64(2), "c": .int64(3)])
        let answer = try requireRecord(
            try await database.modify(RecordOperation(.create, sent, desiredKeys: ["a", "c", "missing"])))
        #expect(answer.fields == ["a": .int64(1), "c": .int64(3)])
        #expect(answer.changeTag != nil)
        let none = try requireRecord(
            try await database.modify(RecordOperation(.forceUpdate, note("n1", ["d": .int64(4)]), desiredKeys: [])))
        #expect(none.fields.isEmpty)
        // The server keeps every field.
        #expect(try await database.fetch("n1")?.fields.count == 4)
    }

    func atomicFailureAppliesNothing() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("taken")])
        let operations = [
            RecordOperation(.create, note("a")),
            RecordOperation(.create, note("taken")),
            RecordOperation(.forceUpdate, note("b")),
        ]
        let results = try await database.modifyRecords(operations, zoneID: notesZone, atomic: true)
        try #require(results.count == 3)
        #expect(expectFailure(results[0], .atomicError)?.recordName == "a")
        expectFailure(results[1], .exists)
        #expect(expectFailure(results[2], .atomicError)?.recordName == "b")
        #expect(try await database.fetch("a") == nil)
        #expect(try await database.fetch("b") == nil)
        // Nothing changed, so there is nothing new to fetch either.
        let changes = try await database.zoneChanges(since: nil)
        #expect(changes.records.savedNames == ["taken"])
    }

    func nonAtomicAppliesEach() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("taken")])
        let operations = [
            RecordOperation(.create, note("a")),
            RecordOperation(.create, note("taken")),
            RecordOperation(.update, note("missing")),
            RecordOperation(.forceUpdate, note("b")),
        ]
        let results = try await database.modifyRecords(operations, zoneID: notesZone, atomic: false)
        try #require(results.count == 4)
        #expect(results[0].record?.recordName == "a")
        expectFailure(results[1], .exists)
        expectFailure(results[2], .notFound)
        #expect(results[3].record?.recordName == "b")
        #expect(try await database.fetch("a") != nil)
        #expect(try await database.fetch("b") != nil)
    }

    func atomicIgnoredInDefaultZone() async throws {
        let database = try await device()
        let zone = ZoneID.defaultZone
        try await database.create([note("taken", in: zone)], in: zone)
        let results = try await database.modifyRecords(
            [RecordOperation(.create, note("a", in: zone)), RecordOperation(.create, note("taken", in: zone))],
            zoneID: zone, atomic: true)
        #expect(results[0].record?.recordName == "a")
        expectFailure(results[1], .exists)
        #expect(try await database.fetch("a", in: zone) != nil)
    }

    func missingZoneIsZoneNotFound() async throws {
        let database = try await device()
        let missing = ZoneID(zoneName: "Missing")
        for atomic in [true, false] {
            let results = try await database.modifyRecords(
                [
                    RecordOperation(.create, note("a", in: missing)),
                    RecordOperation(.forceUpdate, note("b", in: missing)),
                ],
                zoneID: missing, atomic: atomic)
            #expect(results.count == 2)
            for result in results { #expect(expectFailure(result, .zoneNotFound)?.zoneID == missing) }
        }
        let lookup = try await database.lookupRecords(["a"], zoneID: missing, desiredKeys: nil)
        expectFailure(lookup[0], .zoneNotFound)
        await expectCloudError(.zoneNotFound) {
            try await database.queryRecords(
                RecordQuery(recordType: "Note"), zoneID: missing, resultsLimit: nil, continuationMarker: nil,
                desiredKeys: nil)
        }
    }

    func tooManyOperationsIsBadRequest() async throws {
        let database = try await deviceWithZone()
        let operations = (0...200).map { RecordOperation(.create, note("n\($0)")) }
        await expectCloudError(.badRequest) {
            try await database.modifyRecords(operations, zoneID: notesZone, atomic: false)
        }
        #expect(try await database.fetch("n0") == nil)
        let lookups = (0...200).map { "n\($0)" }
        await expectCloudError(.badRequest) {
            try await database.lookupRecords(lookups, zoneID: notesZone, desiredKeys: nil)
        }
        // 200 is allowed.
        let saved = try await database.apply(Array(operations.prefix(200)), atomic: false)
        #expect(saved.count == 200)
        #expect(
            try await database.lookupRecords(Array(lookups.prefix(200)), zoneID: notesZone, desiredKeys: nil).count
                == 200)
    }

    func recordOverSizeLimitIsRefused() async throws {
        let database = try await deviceWithZone()
        let limit = RecordEncoder.defaultSizeLimit
        func sized(_ size: Int, name: String) -> Record {
            let overhead = WireFormat.encodedSize(ofFields: ["text": .string("")])
            return note(name, ["text": .string(String(repeating: "x", count: size - overhead))])
        }
        #expect(WireFormat.encodedSize(ofFields: sized(limit, name: "a").fields) == limit)

        let atLimit = try await database.modify(RecordOperation(.create, sized(limit, name: "a")))
        #expect(atLimit.record != nil)
        let over = try await database.modify(RecordOperation(.create, sized(limit + 1, name: "b")))
        #expect(expectFailure(over, .badRequest)?.recordName == "b")
        #expect(try await database.fetch("b") == nil)

        // The merged record of an update counts, not only the fields sent.
        let small = try #require(try await database.create([sized(limit / 2 + 10, name: "c")]).first)
        var grown = small
        grown.fields = ["more": .string(String(repeating: "y", count: limit / 2))]
        expectFailure(try await database.modify(RecordOperation(.update, grown)), .badRequest)
        #expect(try await database.fetch("c") == small)
    }

    func duplicateRecordIsBadRequest() async throws {
        let database = try await deviceWithZone()
        await expectCloudError(.badRequest) {
            try await database.modifyRecords(
                [RecordOperation(.create, note("n1")), RecordOperation(.forceUpdate, note("n1"))], zoneID: notesZone,
                atomic: false)
        }
        #expect(try await database.fetch("n1") == nil)
    }

    func recordOfAnotherZoneIsBadRequest() async throws {
        let database = try await deviceWithZone()
        let result = try await database.modify(RecordOperation(.create, note("n1", in: .defaultZone)))
        expectFailure(result, .badRequest)
        #expect(try await database.fetch("n1") == nil)
        #expect(try await database.fetch("n1", in: .defaultZone) == nil)
    }

    func recordTypeCannotChange() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("n1")])
        var other = note("n1")
        other.recordType = "Task"
        expectFailure(try await database.modify(RecordOperation(.forceReplace, other)), .badRequest)
        #expect(try await database.fetch("n1")?.recordType == "Note")
    }

    func operationsApplyInOrder() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("c"), note("a"), note("b")])
        let changes = try await database.zoneChanges(since: nil)
        #expect(changes.records.savedNames == ["c", "a", "b"])
    }

    func validateReferences() async throws {
        let database = try await deviceWithZone()
        try await database.create([note("target")])
        func pointing(_ name: String, at target: String) -> Record {
            note(name, ["ref": .reference(Reference(recordName: target, action: .validate))])
        }
        // To an existing record, to one created in the same request: fine.
        try await database.create([pointing("a", at: "target"), note("new"), pointing("b", at: "new")])
        // To a missing record, or one deleted in the same request: refused.
        let results = try await database.modifyRecords(
            [
                RecordOperation(.create, pointing("c", at: "nowhere")),
                RecordOperation(.forceDelete, note("target")),
                RecordOperation(.create, pointing("d", at: "target")),
            ], zoneID: notesZone, atomic: false)
        expectFailure(results[0], .validatingReferenceError)
        #expect(results[1] == .deleted(recordName: "target", zoneID: notesZone))
        expectFailure(results[2], .validatingReferenceError)
    }

    func deleteSelfReferences() async throws {
        let database = try await deviceWithZone()
        func child(_ name: String, of parent: String) -> Record {
            note(name, ["parent": .reference(Reference(recordName: parent, action: .deleteSelf))])
        }
        let token = try await database.zoneChanges(since: nil).syncToken
        try await database.create([
            note("root"), child("child", of: "root"), child("grandchild", of: "child"),
            note("loose", ["parent": .reference(Reference(recordName: "root"))]),
        ])
        try await database.apply([RecordOperation(.forceDelete, note("root"))])
        #expect(try await database.fetch("child") == nil)
        #expect(try await database.fetch("grandchild") == nil)
        #expect(try await database.fetch("loose") != nil)
        let changes = try await database.allZoneChanges(since: token)
        let results = changes.pages.flatMap(\.records)
        #expect(Set(results.deletedNames) == ["root", "child", "grandchild"])
        #expect(results.savedNames == ["loose"])
    }

    func lookupAnswersInOrder() async throws {
        let database = try await deviceWithZone()
        let saved = try await database.create([note("a", ["x": .int64(1), "y": .int64(2)]), note("b")])
        let results = try await database.lookupRecords(["b", "missing", "a", "b"], zoneID: notesZone, desiredKeys: nil)
        try #require(results.count == 4)
        #expect(results[0].record == saved[1])
        #expect(expectFailure(results[1], .notFound)?.recordName == "missing")
        #expect(results[2].record == saved[0])
        #expect(results[3].record == saved[1])

        let keyed = try await database.lookupRecords(["a"], zoneID: notesZone, desiredKeys: ["y"])
        #expect(keyed[0].record?.fields == ["y": .int64(2)])
        #expect(keyed[0].record?.changeTag == saved[0].changeTag)
    }
}

// MARK: - Clearing fields (Cumulus's dialect: RecordOperation.clearedFields)

extension CloudDatabaseConformance {
    /// A record with fields `a`, `b`, `c` and the two names that only their bytes tell apart.
    private func recordToClear(_ name: String) -> Record {
        var record = note(name, ["a": .string("a"), "b": .int64(1), "c": .double(0.5)])
        // Not a dictionary literal: Swift's `Dictionary` would merge the two names.
        record.fields.updateValue(.int64(2), forKey: composed)
        record.fields.updateValue(.int64(3), forKey: decomposed)
        return record
    }

    /// Expects `fields` to be exactly `a`, `b` = `b` and the decomposed name (the others cleared).
    private func expectCleared(_ fields: RecordFields, b: Int64, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(fields.count == 3, "\(fields.keys)", sourceLocation: sourceLocation)
        #expect(fields["a"] == .string("a") && fields["b"] == .int64(b), sourceLocation: sourceLocation)
        #expect(fields[decomposed] == .int64(3) && fields[composed] == nil, sourceLocation: sourceLocation)
        #expect(fields["c"] == nil, sourceLocation: sourceLocation)
    }

    func updateClearsFields() async throws {
        let database = try await deviceWithZone()
        var stored = try #require(try await database.create([recordToClear("n1")]).first)
        stored.fields = ["b": .int64(2)]
        let updated = try requireRecord(
            try await database.modify(RecordOperation(.update, stored, clearedFields: ["c", composed, "missing"])))
        expectCleared(updated.fields, b: 2)
        #expect(try await database.fetch("n1") == updated)

        // Clearing alone, of fields the record no longer has, is a write like any other.
        var bare = updated
        bare.fields = [:]
        let again = try requireRecord(try await database.modify(RecordOperation(.update, bare, clearedFields: ["c"])))
        expectCleared(again.fields, b: 2)
        #expect(again.changeTag != updated.changeTag)
        #expect(try await database.fetch("n1") == again)
    }

    func forceUpdateClearsFields() async throws {
        let database = try await deviceWithZone()
        let first = try #require(try await database.create([recordToClear("n1")]).first)
        _ = try requireRecord(try await database.modify(RecordOperation(.forceUpdate, note("n1", ["d": .int64(4)]))))
        var stale = first
        stale.fields = ["b": .int64(5)]
        let updated = try requireRecord(
            try await database.modify(RecordOperation(.forceUpdate, stale, clearedFields: ["c", composed, "d"])))
        expectCleared(updated.fields, b: 5)
        #expect(try await database.fetch("n1") == updated)

        // A forceUpdate that creates the record: there is nothing to clear.
        let created = try requireRecord(
            try await database.modify(
                RecordOperation(.forceUpdate, note("fresh", ["b": .int64(1)]), clearedFields: ["c"])))
        #expect(created.fields == ["b": .int64(1)])
    }

    func sentAndClearedIsRefused() async throws {
        let database = try await deviceWithZone()
        let stored = try #require(try await database.create([note("n1", ["a": .int64(1), "b": .int64(2)])]).first)
        var sent = stored
        sent.fields = ["a": .int64(9)]
        for type in [RecordOperationType.update, .forceUpdate] {
            let error = expectFailure(
                try await database.modify(RecordOperation(type, sent, clearedFields: ["b", "a"])), .badRequest)
            #expect(error?.recordName == "n1")
            #expect(error?.reason.contains("'a'") == true, "\(String(describing: error))")
        }
        #expect(try await database.fetch("n1") == stored)

        // The other operations ignore the list: a field they do not send has no value anyway.
        let replaced = try requireRecord(
            try await database.modify(RecordOperation(.replace, sent, clearedFields: ["a", "b"])))
        #expect(replaced.fields == ["a": .int64(9)])
        let created = try requireRecord(
            try await database.modify(RecordOperation(.create, note("n2", ["a": .int64(1)]), clearedFields: ["a"])))
        #expect(created.fields == ["a": .int64(1)])
    }

    func clearingWithStaleTagConflicts() async throws {
        let database = try await deviceWithZone()
        let first = try #require(try await database.create([note("n1", ["a": .int64(1), "b": .int64(1)])]).first)
        var second = first
        second.fields = ["b": .int64(2)]
        let current = try requireRecord(try await database.modify(RecordOperation(.update, second)))

        var stale = first
        stale.fields = [:]
        let error = expectFailure(
            try await database.modify(RecordOperation(.update, stale, clearedFields: ["a"])), .conflict)
        #expect(error?.serverRecord == current)
        #expect(try await database.fetch("n1") == current)
    }

    func clearingFreesRoomUnderTheSizeLimit() async throws {
        let database = try await deviceWithZone()
        let limit = RecordEncoder.defaultSizeLimit
        let big = String(repeating: "x", count: limit * 3 / 4)
        var stored = try #require(try await database.create([note("n1", ["text": .string(big)])]).first)
        // The record as the server will hold it counts: without "text", "more" fits.
        stored.fields = ["more": .string(big)]
        expectFailure(try await database.modify(RecordOperation(.update, stored)), .badRequest)
        let updated = try requireRecord(
            try await database.modify(RecordOperation(.update, stored, clearedFields: ["text"])))
        #expect(updated.fields == ["more": .string(big)])
    }

    func clearedFieldsReachChangesQueriesAndSubscriptions() async throws {
        let phone = try await deviceWithZone()
        let big = RecordQuery(recordType: "Note", filters: [QueryFilter("v", .greaterThanOrEquals, .int64(10))])
        _ = try await phone.modifySubscriptions([
            .save(Subscription(subscriptionID: "big", query: big, firesOn: [.updated], zoneID: notesZone))
        ])
        let laptop = NotificationRecorder(try await device())
        await listening(laptop)
        var stored = try #require(try await phone.create([note("n1", ["v": .int64(20), "title": .string("t")])]).first)
        let token = try await phone.zoneChanges(since: nil).syncToken

        stored.fields = [:]
        let updated = try requireRecord(try await phone.modify(RecordOperation(.update, stored, clearedFields: ["v"])))
        #expect(updated.fields == ["title": .string("t")])
        // The record left the query's results: its subscription hears of it.
        await laptop.wait(
            for: .queryChanged(
                QueryNotification(subscriptionID: "big", recordName: "n1", zoneID: notesZone, reason: .updated)))
        let changes = try await phone.zoneChanges(since: token)
        #expect(changes.records.map(\.record) == [updated])
        let page = try await phone.queryRecords(
            big, zoneID: notesZone, resultsLimit: nil, continuationMarker: nil, desiredKeys: nil)
        #expect(page.records.isEmpty)
    }
}
