import Cumulus
import CumulusServer
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// `PostgresStorage` with several services on one database, as several
/// `cumulus serve` processes would be.
@Suite("PostgreSQL storage", .enabled(if: PostgresTestDatabase.isEnabled))
struct PostgresStorageTests {
    let alice = caller("alice")

    /// Two services on their own storages, on one fresh database.
    static func withTwoServices(_ body: (CloudService, CloudService, PostgresURL) async throws -> Void)
        async throws
    {
        try await PostgresTestDatabase.with { url in
            let first = CloudService(storage: try await PostgresStorage(url: url, logger: quietLogger))
            let second = CloudService(storage: try await PostgresStorage(url: url, logger: quietLogger))
            do {
                try await body(first, second, url)
            } catch {
                try? await first.close()
                try? await second.close()
                throw error
            }
            try await first.close()
            try await second.close()
        }
    }

    @Test("two storages migrating a fresh database at once both open it; each version is recorded once")
    func concurrentMigration() async throws {
        try await PostgresTestDatabase.with { url in
            async let first = PostgresStorage(url: url, logger: quietLogger)
            async let second = PostgresStorage(url: url, logger: quietLogger)
            let storages = try await [first, second]
            var rows: [(Int64, Int64)] = []
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                for try await row in try await connection.query(
                    "SELECT count(*)::bigint, max(version)::bigint FROM cumulus_schema", logger: logger
                ).decode((Int64, Int64).self) {
                    rows.append(row)
                }
            }
            // One row per version: 1 (the tables), 2 (notification channels), 3 (sharing),
            // 4 (query subscriptions), 5 (assets), 6 (identities), 7 (credentials), 8 (one holder per address),
            // 9 (names and blocked identities), 10 (restores and channel credentials), 11 (console tokens),
            // 12 (record names in byte order), 13 (the zone log's origins).
            #expect(rows.count == 1 && rows.first?.0 == 13 && rows.first?.1 == 13)
            for storage in storages { try await storage.close() }
        }
    }

    @Test("a database written by a newer schema version is refused")
    func newerSchemaRefused() async throws {
        try await PostgresTestDatabase.with { url in
            try await PostgresStorage(url: url, logger: quietLogger).close()
            try await PostgresTestDatabase.connect(to: url) { connection, logger in
                try await connection.query("INSERT INTO cumulus_schema (version) VALUES (99)", logger: logger)
            }
            do {
                let storage = try await PostgresStorage(url: url, logger: quietLogger)
                try await storage.close()
                Issue.record("a newer schema was accepted")
            } catch let error as CloudError {
                #expect(error.code == .internalError && error.reason.contains("99"))
            }
        }
    }

    @Test("the service works on PostgreSQL: records, zones, subscriptions, accounts, quotas")
    func serviceBasics() async throws {
        try await Self.withTwoServices { first, second, _ in
            let token = try await first.addContainer(named: "iCloud.pg")
            #expect(try await second.authenticateContainer(named: "iCloud.pg", apiToken: token))
            await #expect(throws: CloudError.self) { _ = try await second.addContainer(named: "iCloud.pg") }
            let user = try await second.addUser(named: "bob", container: "iCloud.pg")
            #expect(
                try await first.user(container: "iCloud.pg", webAuthToken: user.webAuthToken) == user.userRecordName)

            try await first.createZone(as: alice)
            let created = try await first.modify(
                [RecordOperation(.create, note("a", title: "one")), RecordOperation(.create, note("b"))], as: alice)
            guard case .record(let a) = created[0] else {
                Issue.record("not saved: \(created[0])")
                return
            }
            let lookedUp = try await second.lookup(["a", "b", "c"], as: alice)
            #expect(lookedUp.count == 3)
            if case .record(let record) = lookedUp[0] {
                #expect(record.fields["title"] == .string("one") && record.changeTag == a.changeTag)
            } else {
                Issue.record("a is missing: \(lookedUp[0])")
            }
            if case .failure(let error) = lookedUp[2] { #expect(error.code == .notFound) }

            let deleted = try await second.modify([RecordOperation(.forceDelete, note("b"))], as: alice)
            #expect(deleted.count == 1)
            let changes = try await first.zoneChanges(ZoneChangesRequest(zoneID: notesZone), as: alice).get()
            #expect(changes.records.count == 2)

            try await first.setQuotaExceeded(
                true, forUser: "alice", container: "iCloud.test", environment: .development)
            let full = try await second.modify([RecordOperation(.create, note("c"))], as: alice)
            if case .failure(let error) = full[0] {
                #expect(error.code == .quotaExceeded)
            } else {
                Issue.record("a full account saved a record")
            }
        }
    }

    @Test("two servers updating one record with one change tag: exactly one wins, every round")
    func conflictingUpdates() async throws {
        try await Self.withTwoServices { first, second, _ in
            try await first.createZone(as: alice)
            _ = try await first.modify([RecordOperation(.create, note("shared", title: "start"))], as: alice)
            for round in 0..<25 {
                guard case .record(let current) = try await second.lookup(["shared"], as: alice)[0] else {
                    Issue.record("the record is gone")
                    return
                }
                let tag = current.changeTag
                async let fromFirst = first.modify(
                    [RecordOperation(.update, note("shared", title: "first-\(round)", tag: tag))], as: alice)
                async let fromSecond = second.modify(
                    [RecordOperation(.update, note("shared", title: "second-\(round)", tag: tag))], as: alice)
                let results = try await [fromFirst[0], fromSecond[0]]
                let winners = results.compactMap { result -> Record? in
                    if case .record(let record) = result { return record }
                    return nil
                }
                let conflicts = results.filter { result in
                    if case .failure(let error) = result { return error.code == .conflict }
                    return false
                }
                #expect(winners.count == 1 && conflicts.count == 1, "round \(round): \(results)")
                guard case .record(let stored) = try await first.lookup(["shared"], as: alice)[0] else {
                    Issue.record("the record is gone")
                    return
                }
                #expect(stored.fields["title"] == winners.first?.fields["title"])
                #expect(stored.changeTag == winners.first?.changeTag)
            }
            let all = try await first.zoneChanges(ZoneChangesRequest(zoneID: notesZone), as: alice).get()
            #expect(all.records.count == 1)
        }
    }

    @Test("writes through two servers: a reader following the zone feed sees every change once, in order")
    func zoneFeedUnderConcurrentWrites() async throws {
        try await Self.withTwoServices { first, second, url in
            try await first.createZone(as: alice)
            let rounds = 30
            let reader = CloudService(storage: try await PostgresStorage(url: url, logger: quietLogger))
            let writersDone = Mutex(false)
            let writing = Task {
                defer { writersDone.withLock { $0 = true } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, service) in [first, second].enumerated() {
                        group.addTask {
                            for round in 0..<rounds {
                                _ = try await service.modify(
                                    [
                                        RecordOperation(.create, note("w\(index)-\(round)-a")),
                                        RecordOperation(.create, note("w\(index)-\(round)-b")),
                                        RecordOperation(
                                            .forceUpdate, note("counter-\(index)", title: "\(round)")),
                                        RecordOperation(.forceUpdate, note("both", title: "\(index)-\(round)")),
                                    ], as: self.alice)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            var token: SyncToken?
            var seen: [String: Int] = [:]
            var latest: [String: Record] = [:]
            var tagsSeen = Set<String>()
            while true {
                let done = writersDone.withLock { $0 }
                var more = true
                while more {
                    let changes = try await reader.zoneChanges(
                        ZoneChangesRequest(zoneID: notesZone, syncToken: token, resultsLimit: 7), as: alice
                    ).get()
                    for result in changes.records {
                        guard case .record(let record) = result else { continue }
                        seen[record.recordName, default: 0] += 1
                        #expect(tagsSeen.insert(record.changeTag ?? "").inserted, "a change came twice")
                        latest[record.recordName] = record
                    }
                    token = changes.syncToken
                    more = changes.moreComing
                }
                if done { break }
            }
            try await writing.value
            for index in 0..<2 {
                for round in 0..<rounds {
                    #expect(seen["w\(index)-\(round)-a"] == 1 && seen["w\(index)-\(round)-b"] == 1)
                }
            }
            let names = Array(latest.keys)
            let stored = try await reader.lookup(names, as: alice)
            for (name, result) in zip(names, stored) {
                guard case .record(let record) = result else {
                    Issue.record("\(name) is missing")
                    continue
                }
                #expect(latest[name]?.changeTag == record.changeTag, "\(name): the feed missed its last version")
            }
            #expect(latest["counter-0"]?.fields["title"] == .string("\(rounds - 1)"))
            #expect(latest["counter-1"]?.fields["title"] == .string("\(rounds - 1)"))
            #expect(latest.count == 4 * rounds + 3)
            try await reader.close()
        }
    }

    @Test("zones created through two servers: the database feed lists each once")
    func databaseFeedUnderConcurrentWrites() async throws {
        try await Self.withTwoServices { first, second, url in
            _ = try await first.databaseChanges(since: nil, as: alice)
            let count = 25
            let reader = CloudService(storage: try await PostgresStorage(url: url, logger: quietLogger))
            let writersDone = Mutex(false)
            let writing = Task {
                defer { writersDone.withLock { $0 = true } }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, service) in [first, second].enumerated() {
                        group.addTask {
                            for number in 0..<count {
                                try await service.createZone(ZoneID(zoneName: "Z\(index)-\(number)"), as: self.alice)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            var token: SyncToken?
            var seen: [String: Int] = [:]
            while true {
                let done = writersDone.withLock { $0 }
                var more = true
                while more {
                    let changes = try await reader.databaseChanges(since: token, limit: 5, as: alice)
                    for zone in changes.changedZones { seen[zone.zoneName, default: 0] += 1 }
                    token = changes.syncToken
                    more = changes.moreComing
                }
                if done { break }
            }
            try await writing.value
            for index in 0..<2 {
                for number in 0..<count { #expect(seen["Z\(index)-\(number)"] == 1, "Z\(index)-\(number)") }
            }
            #expect(seen[ZoneID.defaultZone.zoneName] == 1)
            #expect(seen.count == 2 * count + 1)
            try await reader.close()
        }
    }

    @Test("two servers giving a new field different types: one type is stored, the other write is refused")
    func concurrentFieldTypes() async throws {
        try await Self.withTwoServices { first, second, _ in
            try await first.createZone(as: alice)
            // Each server has loaded the schema before the fields exist, so
            // each takes every new field for its own first.
            _ = try await first.fieldTypes(container: "iCloud.test", environment: .development)
            _ = try await second.fieldTypes(container: "iCloud.test", environment: .development)
            for round in 0..<10 {
                let field = "value\(round)"
                let alice = alice
                async let asInteger = Self.outcome {
                    try await first.modify(
                        [RecordOperation(.create, Self.record("i\(round)", field, .int64(1)))], as: alice)
                }
                async let asString = Self.outcome {
                    try await second.modify(
                        [RecordOperation(.create, Self.record("s\(round)", field, .string("1")))], as: alice)
                }
                let outcomes = await [asInteger, asString]
                let accepted = outcomes.filter { $0 == nil }.count
                #expect(accepted == 1, "round \(round): \(outcomes)")
                for error in outcomes.compactMap({ $0 }) { #expect(error.code == .badRequest) }
                // Both servers now agree on the stored type.
                let typeOne = try await first.fieldTypes(container: "iCloud.test", environment: .development)
                let typeTwo = try await second.fieldTypes(container: "iCloud.test", environment: .development)
                #expect(typeOne("Note", field) != nil && typeOne("Note", field) == typeTwo("Note", field))
            }
        }
    }

    static func record(_ name: String, _ field: String, _ value: FieldValue) -> Record {
        Record(recordType: "Note", recordName: name, zoneID: notesZone, fields: [field: value])
    }

    /// `nil` when `body` succeeded, or the error it threw.
    static func outcome(_ body: @Sendable () async throws -> [RecordResult]) async -> CloudError? {
        do {
            let results = try await body()
            if case .failure(let error) = results.first { return error }
            return nil
        } catch let error as CloudError {
            return error
        } catch {
            return CloudError(.internalError, reason: "\(error)")
        }
    }
}
