// Uploads models to a sync engine as fast as it can and prints the
// identifier of each one whose upload returned, so that a test can kill it
// with SIGKILL at any instant and check that every printed upload survived.
//
// Usage: CumulusCrashChild <journal directory> <first index> <count> [burst size]
//
// With `--asset <journal directory> <file>` it uploads one model holding the
// file as an asset, prints "uploaded" and waits to be killed.
//
// With `--hold <journal directory>` it opens an engine on the directory,
// prints "ready" and waits to be killed, so that a test can see the
// journal's lock held by a live process and released by its death.

import Cumulus
import Foundation

struct CrashNote: CloudCodable, Identifiable {
    var id: String
    var body: String
    var cloudMetadata: RecordMetadata?
}

/// A database that is never reachable: uploads only go to the journal.
struct UnreachableDatabase: CloudDatabase {
    var scope: DatabaseScope { .private }
    private func fail() -> CloudError { CloudError(.networkFailure, reason: "offline") }
    func modifyRecords(_ operations: [RecordOperation], zoneID: ZoneID, atomic: Bool) async throws -> [RecordResult] {
        throw fail()
    }
    func lookupRecords(_ recordNames: [String], zoneID: ZoneID, desiredKeys: [String]?) async throws -> [RecordResult] {
        throw fail()
    }
    func queryRecords(
        _ query: RecordQuery, zoneID: ZoneID, resultsLimit: Int?, continuationMarker: String?, desiredKeys: [String]?
    ) async throws -> QueryResult { throw fail() }
    func fetchZoneChanges(_ requests: [ZoneChangesRequest]) async throws -> [Result<ZoneChanges, CloudError>] {
        throw fail()
    }
    func fetchDatabaseChanges(since syncToken: SyncToken?, resultsLimit: Int?) async throws -> DatabaseChanges {
        throw fail()
    }
    func listZones() async throws -> [RecordZone] { throw fail() }
    func lookupZones(_ zoneIDs: [ZoneID]) async throws -> [ZoneResult] { throw fail() }
    func modifyZones(_ operations: [ZoneOperation]) async throws -> [ZoneResult] { throw fail() }
    func modifySubscriptions(_ operations: [SubscriptionOperation]) async throws -> [SubscriptionResult] {
        throw fail()
    }
    func listSubscriptions() async throws -> [Subscription] { throw fail() }
    func lookupSubscriptions(_ subscriptionIDs: [String]) async throws -> [SubscriptionResult] { throw fail() }
    func currentUser() async throws -> UserIdentity { throw fail() }
    func resolveShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { throw fail() }
    func acceptShares(_ shares: [ShareLookup]) async throws -> [ShareResult] { throw fail() }
    func lookupUsers(emailAddresses: [String]) async throws -> [UserIdentity] { throw fail() }
    func lookupUsers(userRecordNames: [String]) async throws -> [UserIdentity] { throw fail() }
    func discoverUsers(_ lookupInfos: [UserLookupInfo]) async throws -> [UserIdentity] { throw fail() }
    func notifications() -> AsyncStream<CloudNotification> { AsyncStream { $0.finish() } }
}

/// Writes a line to standard output unbuffered, so that nothing printed is
/// lost when the process is killed.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

struct CrashPhoto: CloudCodable, Identifiable {
    var id: String
    var image: CloudAsset
    var cloudMetadata: RecordMetadata?
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--asset" {
    // Uploads one photo of the file's bytes, says so once `upload` returned, and waits to be killed.
    let engine = try await SyncEngine<CrashPhoto>(
        database: UnreachableDatabase(), directory: URL(fileURLWithPath: arguments[2]),
        configuration: SyncConfiguration(automaticSync: false))
    try await engine.upload(
        CrashPhoto(id: "photo", image: try CloudAsset(contentsOf: URL(fileURLWithPath: arguments[3]))))
    say("uploaded")
    while true {
        try await Task.sleep(for: .seconds(3600))
        _ = engine.zoneID
    }
}
if arguments.count == 3, arguments[1] == "--hold" {
    let engine = try await SyncEngine<CrashNote>(
        database: UnreachableDatabase(), directory: URL(fileURLWithPath: arguments[2]),
        configuration: SyncConfiguration(automaticSync: false))
    say("ready")
    while true {
        try await Task.sleep(for: .seconds(3600))
        _ = engine.zoneID  // the engine, and so its lock, lives until the kill
    }
}
guard arguments.count >= 4, let first = Int(arguments[2]), let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: CumulusCrashChild <directory> <first> <count> [burst]\n".utf8))
    exit(2)  // Foundation's exit
}
let burst = arguments.count > 4 ? Int(arguments[4]) ?? 1 : 1
let directory = URL(fileURLWithPath: arguments[1])
let engine = try await SyncEngine<CrashNote>(
    database: UnreachableDatabase(), directory: directory, configuration: SyncConfiguration(automaticSync: false))
say("ready")

// Concurrent single-model uploads, `burst` at a time, so that group commit
// is exercised; each identifier is printed only after its upload returned.
var index = first
while index < first + count {
    let end = min(index + burst, first + count)
    await withTaskGroup(of: String?.self) { group in
        for i in index..<end {
            group.addTask {
                let note = CrashNote(id: "note-\(i)", body: String(repeating: "x", count: 64 + i % 200))
                do {
                    try await engine.upload(note)
                    return note.id
                } catch {
                    return nil
                }
            }
        }
        for await id in group {
            if let id { say(id) }
        }
    }
    index = end
}
say("done")
