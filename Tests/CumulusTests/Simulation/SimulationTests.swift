import Cumulus
import Testing

/// The seeded simulation: fixed histories in the test run, as many as
/// `CUMULUS_SIMULATION_HISTORIES` asks in long mode, one seed with
/// `CUMULUS_SIMULATION_SEED`.
@Suite("Simulation", .serialized)
struct SimulationTests {
    @Test("seeded histories of several devices under faults keep every invariant")
    func seededHistories() async {
        let (stats, failures) = await runSimulation(.fromEnvironment())
        print(stats.summary)
        for failure in failures {
            print(failure)
            Issue.record("\(failure)")
        }
    }

    @Test("seeded histories of owners and participants sharing a zone keep every invariant")
    func seededHistoriesWithShares() async {
        var options = SimulationOptions.fromEnvironment()
        options.sharing = true
        let (stats, failures) = await runSimulation(options)
        print(stats.summary)
        for failure in failures {
            print(failure)
            Issue.record("\(failure)")
        }
    }

    /// Devices on versions 1 to 3 of the app, updating between sessions,
    /// under every fault of ``seededHistories()``. Fewer histories than
    /// the others in the test run (each checks every field after every
    /// step); long mode runs as many as it asks.
    @Test("seeded histories of devices on different app versions keep every field")
    func seededHistoriesOfMixedVersions() async {
        var options = SimulationOptions.fromEnvironment(defaultHistories: 60)
        options.versions = true
        await runMixedVersions(options)
    }

    @Test("seeded histories of owners and participants on different app versions keep every field")
    func seededHistoriesOfMixedVersionsWithShares() async {
        var options = SimulationOptions.fromEnvironment(defaultHistories: 30)
        options.versions = true
        options.sharing = true
        await runMixedVersions(options)
    }

    /// Histories the long mode found broken, run in every test run: 1693
    /// lost a participant's edit when a write whose answer was lost was sent
    /// again and refused (the participant could only read by then).
    @Test("histories of owners and participants the long mode once broke keep every field")
    func regressionHistoriesWithShares() async {
        var options = SimulationOptions(seeds: [1693], operations: 150)
        options.versions = true
        options.sharing = true
        await runMixedVersions(options)
    }

    @Test("histories without faults, restarts, user switches or stale copies keep every invariant")
    func simpleHistories() async {
        var options = SimulationOptions(seeds: Array(1...10), operations: 150)
        options.disabled = [
            .staleEdit, .connectivity, .restart, .kill, .switchUser, .signOut,
            .fault, .lostAnswer, .zoneDelete, .expireTokens, .duringRetry, .rotateKey,
        ]
        let (stats, failures) = await runSimulation(options)
        print(stats.summary)
        #expect(stats.histories == 10)
        for failure in failures { Issue.record("\(failure)") }
    }
}

/// Runs the histories of mixed versions.
func runMixedVersions(_ options: SimulationOptions) async {
    let (stats, failures) = await runSimulation(options)
    print(stats.summary)
    #expect(stats.histories == options.seeds.count)
    for failure in failures {
        print(failure)
        Issue.record("\(failure)")
    }
}

/// Runs the histories `options` names, one after another.
func runSimulation(_ options: SimulationOptions) async -> (stats: SimulationStats, failures: [SimulationFailure]) {
    var stats = SimulationStats()
    var failures: [SimulationFailure] = []
    for seed in options.seeds {
        let simulator = Simulator(seed: seed, options: options)
        if let failure = await simulator.run() { failures.append(failure) }
        stats.add(simulator.stats)
    }
    return (stats, failures)
}
