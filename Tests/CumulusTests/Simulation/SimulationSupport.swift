import Cumulus
import Foundation

/// The properties a history must keep.
enum SimulationInvariant: String, Sendable, CaseIterable {
    /// Once faults stop and every device synced until quiet, the devices of
    /// one user and that user's zone hold the same models and change tags.
    case convergence
    /// Every field of every present record holds a value no edit superseded.
    case noLostEdit
    /// A record never deleted is present; one deleted after every edit is absent.
    case presence
    /// No record reaches the database of a user other than the one who made
    /// it (with shares, what participants create in the owner's zone is the owner's).
    case ownRecordsOnly
    /// A journal always opens again.
    case journalOpens
    /// The engine threw an error that is not a ``CloudError``.
    case unexpectedError
    /// The engine stopped making progress on the manual clock.
    case stalled
    /// A participant who lost access to a share holds none of its records
    /// once a device of theirs synced, on that device or through their
    /// shared database.
    case lostAccessHoldsNothing
    /// No write of a read-only or removed participant reaches the server.
    case refusedWritesStayOut
    /// The owner's records reach only the share's accepted participants.
    case participantsOnly
    /// In a device's step, no field its model version does not declare
    /// changes on a record the server holds before and after the step.
    case unknownFieldsKept
    /// In a device's step, a field changes only to a value that device's
    /// app wrote into it (or, after a merge without an ancestor or a zone
    /// loss, one its copy held).
    case writtenValuesOnly
    /// A device's engine lists as undecodable exactly the records of its
    /// zone its version cannot decode, and reports each once per server version.
    case undecodableKept
    /// The server holds every note's encrypted field as an envelope (`CUE1`)
    /// that opens with the history's keys and shows nothing of the value.
    case encryptedOnServer
    /// No local-only field (the notes' `mark`) reaches the server or
    /// another device, and a change of local-only fields alone queues nothing.
    case localFieldsStayLocal
    /// While a device holds a record, its model carries the mark its app
    /// last uploaded the record with: through restarts, updates and other
    /// devices' versions of the record.
    case localFieldsKept
}

/// A broken invariant: what the simulator prints, with the seed that replays it.
struct SimulationFailure: Error, CustomStringConvertible {
    var seed: UInt64
    var invariant: SimulationInvariant
    var detail: String
    var logTail: [String]
    /// A history with shares (``SimulationOptions/sharing``).
    var sharing = false
    /// A history of mixed app versions (``SimulationOptions/versions``).
    var versions = false

    /// The test that runs the history.
    var test: String {
        switch (sharing, versions) {
        case (false, false): "seededHistories"
        case (true, false): "seededHistoriesWithShares"
        case (false, true): "seededHistoriesOfMixedVersions"
        case (true, true): "seededHistoriesOfMixedVersionsWithShares"
        }
    }

    var description: String {
        """
        Simulation history \(seed)\(sharing ? " with shares" : "")\(versions ? " of mixed versions" : "") broke \(invariant.rawValue): \(detail)
        Replay: SWIFT_DETERMINISTIC_HASHING=1 CUMULUS_SIMULATION_SEED=\(seed) swift test --filter \(test)
        Last operations:
        \(logTail.map { "  " + $0 }.joined(separator: "\n"))
        """
    }
}

/// Thrown inside a history to stop it at the first broken invariant.
struct InvariantBroken: Error {
    var invariant: SimulationInvariant
    var detail: String
}

/// The operations a history is made of; each can be switched off with
/// `CUMULUS_SIMULATION_WITHOUT=<name>,<name>` to look past a failure.
enum SimulationOperation: String, CaseIterable, Sendable {
    case create, edit, staleEdit, revert, delete, sync
    case connectivity, restart, kill, switchUser, signOut
    case fault, lostAnswer, zoneDelete, expireTokens
    /// Operations on a device while its sync waits to retry.
    case duringRetry
    /// Sharing (in the histories with shares): the owner shares the zone,
    /// changes a permission, adds or removes a participant, stops sharing;
    /// a participant accepts or leaves.
    case share, setPermission, addParticipant, removeParticipant, stopSharing, accept, leave
    /// A device updates its app to a newer version between sessions (in
    /// the histories of mixed versions): its engine closes and one of the
    /// newer model type opens on the same directory.
    case upgrade
    /// A device's app moves to the history's next key for new writes of
    /// the encrypted field; its engine reopens with it.
    case rotateKey
    /// The app uploads a model whose only change is its local-only mark.
    case mark
}

/// How many histories of how many operations, from which seeds.
struct SimulationOptions: Sendable {
    var seeds: [UInt64]
    var operations: Int
    var disabled: Set<SimulationOperation> = []
    /// Whether the histories share the owner's zone with other users'
    /// devices (``Simulator`` with shares) instead of syncing every user's own zone.
    var sharing = false
    /// Whether devices run versions 1 to 3 of the app's model and update
    /// it between sessions, instead of all running version 1.
    var versions = false
    /// How many of the last operations a failure prints (`CUMULUS_SIMULATION_LOG_LINES`).
    var logLines = 40

    /// The fixed set the test runs, or what the environment asks:
    /// `CUMULUS_SIMULATION_SEED` (one history), `CUMULUS_SIMULATION_HISTORIES`
    /// (long mode, from `CUMULUS_SIMULATION_FIRST_SEED`, default 1),
    /// `CUMULUS_SIMULATION_OPERATIONS`, `CUMULUS_SIMULATION_WITHOUT` and
    /// `CUMULUS_SIMULATION_LOG_LINES`.
    static func fromEnvironment(defaultHistories: Int = 200, defaultOperations: Int = 150) -> SimulationOptions {
        let environment = ProcessInfo.processInfo.environment
        let operations = environment["CUMULUS_SIMULATION_OPERATIONS"].flatMap { Int($0) } ?? defaultOperations
        var options: SimulationOptions
        if let seed = environment["CUMULUS_SIMULATION_SEED"].flatMap({ UInt64($0) }) {
            options = SimulationOptions(seeds: [seed], operations: operations)
        } else {
            let count = environment["CUMULUS_SIMULATION_HISTORIES"].flatMap { Int($0) } ?? defaultHistories
            let first = environment["CUMULUS_SIMULATION_FIRST_SEED"].flatMap { UInt64($0) } ?? 1
            options = SimulationOptions(seeds: (0..<UInt64(max(0, count))).map { first + $0 }, operations: operations)
        }
        options.logLines = environment["CUMULUS_SIMULATION_LOG_LINES"].flatMap { Int($0) } ?? options.logLines
        for name in (environment["CUMULUS_SIMULATION_WITHOUT"] ?? "").split(separator: ",") {
            if let operation = SimulationOperation(rawValue: name.trimmingCharacters(in: .whitespaces)) {
                options.disabled.insert(operation)
            }
        }
        return options
    }
}

/// The figures of a run, printed as one summary line.
struct SimulationStats: Sendable {
    var histories = 0
    var failedHistories = 0
    var operations = 0
    var faults: [String: Int] = [:]
    var restarts = 0
    var kills = 0
    var userSwitches = 0
    var syncs = 0
    var retryWaits = 0
    var operationsDuringRetries = 0
    var conflicts = 0
    var secondEnginesRefused = 0
    /// Sharing operations that reached the server, by kind.
    var sharing: [String: Int] = [:]
    /// Participant writes the server refused (`recordFailed`).
    var refusedWrites = 0
    /// Engines that lost their shared zone (`shareLost`).
    var sharesLost = 0
    /// Participant writes made on their devices, and those handed to the
    /// oracle once the server showed them.
    var participantWrites = 0
    var acknowledgedWrites = 0
    /// Checks of a device whose user lost access and which synced since.
    var checkedAfterLoss = 0
    /// App updates, field changes judged after steps, undecodable records reported.
    var upgrades = 0
    var fieldChanges = 0
    var undecodableReports = 0
    /// Key rotations, distinct encrypted values found sealed on the server,
    /// and the values on the server at the end of the histories by key.
    var keyRotations = 0
    var sealedValues = 0
    var sealedAtEnd: [String: Int] = [:]
    /// Uploads of a mark alone, and marks found on a device as its app last set them.
    var markOnlyUploads = 0
    var marksChecked = 0
    var failures: [SimulationInvariant: Int] = [:]

    mutating func add(_ other: SimulationStats) {
        histories += other.histories
        failedHistories += other.failedHistories
        operations += other.operations
        faults.merge(other.faults, uniquingKeysWith: +)
        restarts += other.restarts
        kills += other.kills
        userSwitches += other.userSwitches
        syncs += other.syncs
        retryWaits += other.retryWaits
        operationsDuringRetries += other.operationsDuringRetries
        conflicts += other.conflicts
        secondEnginesRefused += other.secondEnginesRefused
        sharing.merge(other.sharing, uniquingKeysWith: +)
        refusedWrites += other.refusedWrites
        sharesLost += other.sharesLost
        participantWrites += other.participantWrites
        acknowledgedWrites += other.acknowledgedWrites
        checkedAfterLoss += other.checkedAfterLoss
        upgrades += other.upgrades
        fieldChanges += other.fieldChanges
        undecodableReports += other.undecodableReports
        keyRotations += other.keyRotations
        sealedValues += other.sealedValues
        sealedAtEnd.merge(other.sealedAtEnd, uniquingKeysWith: +)
        markOnlyUploads += other.markOnlyUploads
        marksChecked += other.marksChecked
        failures.merge(other.failures, uniquingKeysWith: +)
    }

    /// The figures of the histories with shares, if any.
    private var sharingSummary: String {
        guard !sharing.isEmpty else { return "" }
        let operations = sharing.keys.sorted().map { "\($0)=\(sharing[$0]!)" }.joined(separator: " ")
        return " sharing[\(operations)] refusedWrites=\(refusedWrites) sharesLost=\(sharesLost)"
            + " participantWrites=\(participantWrites) acknowledgedWrites=\(acknowledgedWrites)"
            + " checkedAfterLoss=\(checkedAfterLoss)"
    }

    /// One line: every figure, faults and failures by kind.
    var summary: String {
        let faultList = faults.keys.sorted().map { "\($0)=\(faults[$0]!)" }.joined(separator: " ")
        let sealedList = sealedAtEnd.keys.sorted().map { "\($0)=\(sealedAtEnd[$0]!)" }.joined(separator: " ")
        let failureList = failures.keys.map(\.rawValue).sorted().map { name in
            "\(name)=\(failures[SimulationInvariant(rawValue: name)!]!)"
        }
        return "Simulation: histories=\(histories) failed=\(failedHistories) operations=\(operations)"
            + " syncs=\(syncs) retryWaits=\(retryWaits) operationsDuringRetries=\(operationsDuringRetries)"
            + " restarts=\(restarts) kills=\(kills) secondEnginesRefused=\(secondEnginesRefused)"
            + " userSwitches=\(userSwitches) conflicts=\(conflicts)"
            + " faults[\(faultList)]\(sharingSummary)"
            + " upgrades=\(upgrades) fieldChanges=\(fieldChanges) undecodableReports=\(undecodableReports)"
            + " keyRotations=\(keyRotations) sealedValues=\(sealedValues) sealedAtEnd[\(sealedList)]"
            + " markOnlyUploads=\(markOnlyUploads) marksChecked=\(marksChecked)"
            + " failures[\(failureList.joined(separator: " "))]"
    }
}

/// The events of one engine instance, collected as they come.
final class EventLog: @unchecked Sendable {
    // Safety: `events` is only touched under `lock`.
    private let lock = NSLock()
    private var events: [SyncEvent] = []
    private var task: Task<Void, Never>?

    init(_ events: SyncEvents) {
        task = Task { [weak self] in
            for await event in events { self?.append(event) }
        }
    }

    deinit { task?.cancel() }

    private func append(_ event: SyncEvent) {
        lock.withLock { events.append(event) }
    }

    /// The events from `index` on.
    func events(from index: Int) -> [SyncEvent] {
        lock.withLock { index < events.count ? Array(events[index...]) : [] }
    }

    /// How many waits the runs went into (each wait's last event before it
    /// is `retryScheduled`).
    var retryWaits: Int {
        lock.withLock {
            events.reduce(0) { count, event in
                if case .retryScheduled = event { count + 1 } else { count }
            }
        }
    }

    /// How many runs have ended (each run's last event is `syncFinished`).
    var finishedRuns: Int {
        lock.withLock {
            events.reduce(0) { count, event in
                if case .syncFinished = event { count + 1 } else { count }
            }
        }
    }
}
