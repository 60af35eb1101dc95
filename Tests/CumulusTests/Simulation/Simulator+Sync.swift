import Cumulus
import CumulusTesting
import Foundation

extension Simulator {
    /// How a driven `sync()` ended.
    enum SyncOutcome {
        case succeeded
        case failed(CloudError)
        /// The device was killed while its sync waited; its engine was reopened.
        case killed
    }

    /// Runs `sync()` in a task and drives the manual clock until it ends:
    /// while the engine sleeps (a retry wait), sometimes performs another
    /// operation on the same device first, then moves to the next deadline.
    func sync(_ device: SimulationDevice, duringRetries: Bool) async throws -> SyncOutcome {
        let outcome = try await driveSync(device, duringRetries: duringRetries)
        // Killed outside the driving, whose task and locals held the engine.
        if case .killed = outcome { try await kill(device) }
        return outcome
    }

    private func driveSync(_ device: SimulationDevice, duringRetries: Bool) async throws -> SyncOutcome {
        guard let engine = device.engine else { preconditionFailure("Internal inconsistency: no engine") }
        let start = nextTick()
        let user = device.handle.signedInUser
        let accountChanges = device.accountChanges
        let completion = Completion()
        let task = Task {
            do {
                try await engine.sync()
                completion.finish(nil)
            } catch {
                completion.finish(error)
            }
        }
        stats.syncs += 1
        var spins = 0
        while true {
            guard settled(device.sleepers, completion) else {
                try await idle(&spins, "device \(device.index)'s sync")
                continue
            }
            spins = 0
            if completion.outcome != nil { break }
            stats.retryWaits += 1
            if duringRetries, random.chance(0.4), let operation = random.weighted(enabled(Self.duringRetryWeights)) {
                stats.operationsDuringRetries += 1
                record("d\(device.index)'s sync waits until \(clock.pendingDeadlines.first?.offset ?? .zero):")
                if operation == .kill {
                    try await readEventsBeforeKill(of: device)
                    // Cancelling the sync stops its run at the wait; until
                    // it has, the engine still counts as one on the clock.
                    task.cancel()
                    zombies.append(Zombie(sleepers: device.sleepers, completion: completion))
                    _ = await task.result
                    return .killed
                }
                try await perform(operation, on: device)
            }
            clock.advanceToNextDeadline()
        }
        device.runs += 1
        try await readEvents(of: device)
        if case .some(.some(let error)) = completion.outcome {
            guard let error = error as? CloudError else {
                throw InvariantBroken(
                    invariant: .unexpectedError, detail: "device \(device.index)'s sync threw \(error)")
            }
            record("d\(device.index) sync failed: \(error.code)")
            return .failed(error)
        }
        try await settled(device, engine, start: start, user: user, accountChanges: accountChanges)
        return .succeeded
    }

    /// Whether every engine is asleep on the clock or done: the sync's
    /// engine (`sleepers`, `completion`) and every zombie, with every
    /// sleeper registered on the clock and none woken but not yet running.
    private func settled(_ sleepers: SleeperCount, _ completion: Completion) -> Bool {
        let own = sleepers.value
        guard own > 0 || completion.outcome != nil, zombies.allSatisfy(\.isIdle) else { return false }
        let counted = zombies.reduce(own) { $0 + $1.sleepers.value }
        return clock.sleeperCount == counted
    }

    /// After a successful sync: with nothing pending as the same user, this
    /// device's writes are on the server and it has seen the server as of `start`.
    private func settled(
        _ device: SimulationDevice, _ engine: SyncEngine<SimNote>, start: Int, user: String?, accountChanges: Int
    ) async throws {
        device.syncCount += 1
        let pending = await engine.pendingChangeCount
        record("d\(device.index) synced, \(pending) pending")
        guard let user, user == device.handle.signedInUser, accountChanges == device.accountChanges else { return }
        device.engineUser = user
        guard pending == 0 else { return }
        oracle.published(device: device.index, tick: nextTick())
        device.lastSync = (user, start)
        let models = await engine.models
        for _ in 0..<2 where !models.isEmpty && random.chance(0.6) {
            let note = random.pick(models)
            device.screens[note.id] = (note, device.syncCount)
        }
    }

    /// Kills the device while its sync waits: the task is cancelled, the
    /// engine dropped without closing, and a new engine opened on the same
    /// journal. In a process that dies the system releases the directory at
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

    /// Reads what the engine reported before it is killed mid-run (a user
    /// switch at the run's start, say). No event marks the end of what it
    /// yielded so far, so this waits until the log stops growing.
    private func readEventsBeforeKill(of device: SimulationDevice) async throws {
        guard let log = device.events else { return }
        var count = log.events(from: 0).count
        var unchanged = 0
        var spins = 0
        while unchanged < 50 {
            try await idle(&spins, "the events of device \(device.index)")
            let now = log.events(from: 0).count
            unchanged = now == count ? unchanged + 1 : 0
            count = now
        }
        handle(log.events(from: device.eventsRead), of: device)
    }

    private func handle(_ events: [SyncEvent], of device: SimulationDevice) {
        device.eventsRead += events.count
        for event in events {
            switch event {
            case .accountChanged(let previous, let new, let discarded):
                let now = nextTick()
                for name in discarded { oracle.withdraw(name, tick: now) }
                device.forgetAll()
                device.engineUser = new
                record("d\(device.index) account \(previous ?? "nil") -> \(new ?? "nil"), discarded \(discarded)")
            case .conflict(let name, let resolution):
                stats.conflicts += 1
                record("d\(device.index) conflict \(name) \(resolution)")
            case .zoneRecreated, .fullRefetch:
                record("d\(device.index) \(event)")
            case .recordFailed(let name, let error):
                record("d\(device.index) record failed \(name): \(error.code)")
            default: break
            }
        }
    }
}
