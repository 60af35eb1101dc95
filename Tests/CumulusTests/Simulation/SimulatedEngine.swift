import CumulusTesting
import Foundation

@testable import Cumulus

/// An engine of one version of the app, as the simulator drives it: the
/// version's models are carried as ``SimNote``s.
protocol SimulatedEngine: Actor {
    /// The version of the app's model this engine syncs.
    nonisolated var version: Int { get }
    nonisolated var events: SyncEvents { get }
    nonisolated var zoneID: ZoneID { get }
    var notes: [SimNote] { get }
    func note(withIdentifier identifier: String) -> SimNote?
    func upload(note: SimNote) async throws
    func delete(identifiers: [String]) async throws
    /// Starts (`resume == false`) or resumes a stepped run: the wait it
    /// stopped at, or `nil` when the run finished.
    func steppedRun(resume: Bool) async throws -> Duration?
    func close() async
    var pendingChangeCount: Int { get }
    var refusedChanges: [String: CloudError] { get }
    var undecodableRecords: Set<String> { get }
    func discardChanges(identifiers: [String]) async throws
    func shareZone(
        title: String?, participants: [ShareParticipant], publicPermission: SharePermission
    ) async throws -> Share
    func fetchZoneShare() async throws -> Share?
    func saveShare(_ share: Share) async throws -> Share
    func stopSharing(_ share: Share) async throws
    func leave(_ share: Share) async throws
    /// The records whose local deletion waits to be sent (refused ones
    /// included) or was sent without an answer.
    var waitingDeletions: Set<String> { get }
}

extension SyncEngine: SimulatedEngine where Model: SimModel {
    nonisolated var version: Int { Model.version }

    var notes: [SimNote] { models.map(\.note) }

    func note(withIdentifier identifier: String) -> SimNote? {
        model(withIdentifier: identifier)?.note
    }

    func upload(note: SimNote) async throws {
        try await upload(Model(note))
    }

    func steppedRun(resume: Bool) async throws -> Duration? {
        let step = resume ? try await resumeSteppedRun() : try await startSteppedRun()
        if case .wait(let delay) = step { return delay }
        return nil
    }

    var waitingDeletions: Set<String> {
        var names = Set(replica.inDoubt.keys)
        for (name, change) in replica.pending {
            if case .delete = change.kind { names.insert(name) }
        }
        return names
    }
}

extension Simulator {
    /// Opens an engine of version `version` of the app on `directory`.
    static func openEngine(
        version: Int, database: InMemoryCloudDatabase, directory: URL, configuration: SyncConfiguration
    ) async throws -> any SimulatedEngine {
        switch version {
        case 1:
            try await SyncEngine<SimNoteV1>(database: database, directory: directory, configuration: configuration)
        case 2:
            try await SyncEngine<SimNoteV2>(database: database, directory: directory, configuration: configuration)
        default:
            try await SyncEngine<SimNoteV3>(database: database, directory: directory, configuration: configuration)
        }
    }
}
