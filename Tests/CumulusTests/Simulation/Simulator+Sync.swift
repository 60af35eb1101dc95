import CumulusTesting
import Foundation

@testable import Cumulus

extension Simulator {
    /// How a driven `sync()` ended.
    enum SyncOutcome {
        case succeeded
        case failed(CloudError)
        /// The device was killed while its sync waited; its engine was reopened.
        case killed
    }

    /// Runs a sync in this task, one step at a time: at each of the
    /// engine's waits, sometimes performs another operation on the same
    /// device first, then moves the clock by the wait. Nothing runs beside
    /// the simulator, so a seed replays to the same history.
    func sync(_ device: SimulationDevice, duringRetries: Bool) async throws -> SyncOutcome {
        let outcome = try await driveSync(device, duringRetries: duringRetries)
        // Killed outside the driving, whose locals held the engine.
        if case .killed = outcome { try await kill(device) }
        return outcome
    }

    private func driveSync(_ device: SimulationDevice, duringRetries: Bool) async throws -> SyncOutcome {
        guard let engine = device.engine else { preconditionFailure("Internal inconsistency: no engine") }
        let start = nextTick()
        let user = device.handle.signedInUser
        let accountChanges = device.accountChanges
        stats.syncs += 1
        var failure: (any Error)?
        do {
            var step = try await engine.steppedRun(resume: false)
            while let delay = step {
                stats.retryWaits += 1
                device.waits += 1
                let weights = options.sharing ? Self.sharingDuringRetryWeights : Self.duringRetryWeights
                if duringRetries, random.chance(0.4), let operation = random.weighted(enabled(weights)) {
                    stats.operationsDuringRetries += 1
                    record("d\(device.index)'s sync waits until \(clock.now.advanced(by: delay).offset):")
                    if operation == .kill {
                        try await readEventsBeforeKill(of: device)
                        return .killed
                    }
                    try await perform(operation, on: device)
                }
                clock.advance(by: delay)
                step = try await engine.steppedRun(resume: true)
            }
        } catch {
            failure = error
        }
        device.runs += 1
        try await readEvents(of: device)
        if let failure {
            guard let error = failure as? CloudError else {
                throw InvariantBroken(
                    invariant: .unexpectedError, detail: "device \(device.index)'s sync threw \(failure)")
            }
            record("d\(device.index) sync failed: \(error.code)")
            return .failed(error)
        }
        try await settled(device, engine, start: start, user: user, accountChanges: accountChanges)
        return .succeeded
    }

    /// After a successful sync: with nothing pending as the same user, this
    /// device's writes are on the server and it has seen the server as of `start`.
    private func settled(
        _ device: SimulationDevice, _ engine: any SimulatedEngine, start: Int, user: String?, accountChanges: Int
    ) async throws {
        device.syncCount += 1
        device.lastSuccessfulSync = start
        let pending = await engine.pendingChangeCount
        record("d\(device.index) synced, \(pending) pending")
        guard let user, user == device.handle.signedInUser, accountChanges == device.accountChanges else { return }
        device.engineUser = user
        guard pending == 0 else { return }
        device.queueDrained = true
        oracle.published(device: device.index, tick: nextTick())
        device.lastSync = (user, start)
        let models = await engine.notes
        for _ in 0..<2 where !models.isEmpty && random.chance(0.6) {
            let note = random.pick(models)
            device.screens[note.id] = (note, device.syncCount)
        }
    }

    /// Kills the device while its sync waits: the engine is dropped
    /// without closing, in the middle of its run, and a new engine opened
    /// on the same journal. In a process that dies the system releases the directory at
    /// once; in this one, the dropped engine releases it when its journal's
    /// last write has finished, and the new engine waits (briefly, in real
    /// time) for that.
    private func kill(_ device: SimulationDevice) async throws {
        device.engine = nil
        device.events = nil
        device.forgetAll()
        stats.kills += 1
        record("d\(device.index) killed; reopens")
        try await open(device)
    }

    /// Reads the events of the device's runs so far: user switches withdraw
    /// the discarded changes from the oracle, conflicts are counted.
    private func readEvents(of device: SimulationDevice) async throws {
        guard let log = device.events else { return }
        var spins = 0
        while log.finishedRuns < device.runs {
            try await idle(&spins, "the events of device \(device.index)")
        }
        handle(log.events(from: device.eventsRead), of: device)
    }

    /// Reads what the engine reported before it is killed in a wait: the
    /// last event of a run before each wait is its `retryScheduled`, so
    /// the log is complete once it holds as many as the waits so far.
    private func readEventsBeforeKill(of device: SimulationDevice) async throws {
        guard let log = device.events else { return }
        var spins = 0
        while log.retryWaits < device.waits {
            try await idle(&spins, "the events of device \(device.index)")
        }
        handle(log.events(from: device.eventsRead), of: device)
    }

    /// An engine reports a record undecodable once per server version: the
    /// server's change tag must have changed since its last report of it.
    private func undecodable(_ name: String, reason: String, on device: SimulationDevice) {
        stats.undecodableReports += 1
        record("d\(device.index) (v\(device.version)) cannot decode \(name): \(reason)")
        // A record the server did not hold at the last check (its zone was
        // deleted and is being refilled) has no version to compare yet.
        guard let tag = fieldOracle.snapshot[name]?.cloudMetadata?.changeTag else { return }
        if device.undecodableReported[name] == tag {
            eventViolations.append(
                (.undecodableKept, "device \(device.index) reported \(name) undecodable twice at change tag \(tag)"))
        }
        device.undecodableReported[name] = tag
    }

    private func handle(_ events: [SyncEvent], of device: SimulationDevice) {
        device.eventsRead += events.count
        for event in events {
            switch event {
            case .accountChanged(let previous, let new, let discarded):
                let now = nextTick()
                for name in discarded { oracle.withdraw(name, tick: now) }
                device.forgetAll()
                // The engine forgets the previous user's local values with their records.
                device.marks.removeAll()
                device.undecodableReported = [:]
                device.engineUser = new
                record("d\(device.index) account \(previous ?? "nil") -> \(new ?? "nil"), discarded \(discarded)")
            case .mergedWithoutAncestor(let name):
                mergedWithoutAncestor.insert(name)
                record("d\(device.index) merged \(name) without an ancestor")
            case .undecodableRecord(let name, let reason):
                undecodable(name, reason: reason, on: device)
                device.marks[name] = nil
            case .conflict(let name, let resolution):
                stats.conflicts += 1
                record("d\(device.index) conflict \(name) \(resolution)")
            case .zoneRecreated, .fullRefetch:
                // The engine starts over on the zone: what it reported before is forgotten.
                device.undecodableReported = [:]
                record("d\(device.index) \(event)")
            case .recordFailed(let name, let error):
                if error.code == .accessDenied { stats.refusedWrites += 1 }
                record("d\(device.index) record failed \(name): \(error.code)")
            case .shareLost(let discarded):
                stats.sharesLost += 1
                device.forgetAll()
                device.marks.removeAll()
                device.undecodableReported = [:]
                record("d\(device.index) share lost, discarded \(discarded)")
            default: break
            }
        }
    }
}
