import Cumulus
import CumulusTesting
import Foundation

/// One seeded history: 2 to 4 devices and one in-memory server on one
/// manual clock, driven by random operations and faults from one seed.
///
/// After every step it checks that no user's zone holds another user's
/// record, that every journal opens, and that the server holds the notes'
/// encrypted field sealed (devices rotate keys now and then, see
/// ``SimulationKeys``); at the end it stops the faults,
/// syncs every device until quiet, and checks convergence and the
/// ``Oracle`` (no lost edit, presence).
///
/// With ``SimulationOptions/sharing``, alice's devices sync her zone and
/// share it with bob's and carol's devices, which sync it through their
/// shared databases; after every step the ``SharingOracle`` checks who
/// may hold and write what.
final class Simulator {
    let seed: UInt64
    let options: SimulationOptions
    var random: SeededRandom
    let clock = ManualClock()
    let server: InMemoryCloudServer
    let users = ["alice", "bob", "carol"]
    let zone = ZoneID(zoneName: SimNote.cloudRecordType)
    let root: URL
    var devices: [SimulationDevice] = []
    var oracle = Oracle()
    var stats = SimulationStats()
    var log: [String] = []
    /// Orders writes and syncs for the oracle.
    var tick = 0
    /// Makes every edited value unique.
    var serial = 0
    var createdCount: [String: Int] = [:]
    /// The participants' writes and access, in a history with shares.
    var sharingOracle = SharingOracle()
    /// The user whose zone is shared, in a history with shares.
    let sharingOwner = "alice"
    /// The users the owner shares with.
    let participantUsers = ["bob", "carol"]
    /// The device of the step being taken.
    var actor: SimulationDevice?
    /// The owner's zone's notes after the last check.
    var zoneAtLastCheck: [String: SimContent] = [:]
    /// Each participant's handle on their shared database, without faults: what the server lets them read.
    var inspectors: [String: InMemoryCloudDatabase] = [:]
    /// Every field's history on the server, checked after every step.
    var fieldOracle = FieldOracle()
    /// Records a merge without an ancestor touched in the step being taken.
    var mergedWithoutAncestor: Set<String> = []
    /// Broken invariants found while reading events, thrown after the step's checks.
    var eventViolations: [(SimulationInvariant, String)] = []
    /// The keys of the encrypted field, which every device reads with
    /// (a check's self-test puts in a broken cipher before ``setUp()``).
    var keys: SimulationKeys
    /// The encrypted values the checks opened, each found sealed.
    var openedValues: [SealedValue: String] = [:]

    init(seed: UInt64, options: SimulationOptions) {
        self.seed = seed
        self.options = options
        random = SeededRandom(seed: seed)
        keys = SimulationKeys(seed: seed)
        server = InMemoryCloudServer(clock: clock, startDate: Date(timeIntervalSince1970: 1_700_000_000))
        root = Self.scratchDirectory.appendingPathComponent("cumulus-simulation-\(seed)-\(UUID().uuidString)")
    }

    /// Journals go to memory when the system has a tmpfs: `fsync` there is
    /// free, and the histories measure the engine, not the disk.
    static var scratchDirectory: URL {
        let shm = URL(fileURLWithPath: "/dev/shm")
        if FileManager.default.isWritableFile(atPath: shm.path) { return shm }
        return FileManager.default.temporaryDirectory
    }

    /// Every engine's configuration comes from here: no automatic sync, the
    /// history's clock, the engine's random source (backoff jitter, write
    /// identifiers) seeded from the history's generator, and the
    /// encryption of the model's encrypted field.
    static func configuration(
        clock: any Clock<Duration>, randomSeed: UInt64, encryption: FieldEncryption, sharedZone: ZoneID? = nil
    ) -> SyncConfiguration {
        let jitter = SeededJitter(seed: randomSeed)
        var configuration = SyncConfiguration(
            zoneName: sharedZone?.zoneName, automaticSync: false,
            retryPolicy: RetryPolicy(
                initialDelay: .seconds(1), maximumDelay: .seconds(60), jitter: 0.2, maximumAttempts: 5),
            clock: clock, random: { jitter.next() })
        configuration.zoneOwner = sharedZone?.ownerRecordName
        configuration.fieldEncryption = encryption
        return configuration
    }

    // MARK: A history

    /// Runs the history; `nil` when it kept every invariant.
    func run() async -> SimulationFailure? {
        stats.histories = 1
        defer {
            stats.participantWrites = sharingOracle.queued
            tearDown()
        }
        do {
            try await setUp()
            actor = nil
            try await checkFields()
            for _ in 0..<options.operations {
                let access = sharingOracle.access
                try await step()
                try await checkOwnRecordsOnly()
                try await checkEncryptedFields()
                try await checkLocalFields()
                try await checkFields()
                if options.sharing { try await checkSharing(accessBefore: access) }
            }
            try await finish()
            return nil
        } catch {
            let broken =
                error as? InvariantBroken
                ?? InvariantBroken(invariant: .unexpectedError, detail: "the simulator stopped on \(error)")
            stats.failures[broken.invariant, default: 0] += 1
            stats.failedHistories = 1
            return SimulationFailure(
                seed: seed, invariant: broken.invariant, detail: broken.detail,
                logTail: Array(log.suffix(options.logLines)), sharing: options.sharing,
                versions: options.versions)
        }
    }

    func setUp() async throws {
        guard !options.sharing else { return try await setUpSharing() }
        let count = random.int(in: 2...4)
        for index in 0..<count {
            let directory = root.appendingPathComponent("device\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let device = SimulationDevice(
                index: index, handle: server.database(signedInAs: "alice"), directory: directory)
            device.version = initialVersion()
            if options.versions { device.sendsFieldDeltas = random.chance(0.7) }
            devices.append(device)
            try await open(device)
        }
        record(
            "\(count) devices signed in as alice, versions \(devices.map(\.version)), "
                + "field deltas \(devices.map(\.sendsFieldDeltas))")
    }

    func tearDown() {
        for device in devices {
            device.engine = nil
            device.events = nil
        }
        try? FileManager.default.removeItem(at: root)
    }

    /// Opens the device's engine on its journal; a journal that does not
    /// open breaks ``SimulationInvariant/journalOpens``.
    func open(_ device: SimulationDevice) async throws {
        // A participant's device has no engine until they accepted a share.
        guard device.participant == nil || device.sharedZone != nil else { return }
        var configuration = Self.configuration(
            clock: clock, randomSeed: random.next(), encryption: keys.encryption(current: device.currentKey),
            sharedZone: device.sharedZone)
        configuration.sendsFieldDeltas = device.sendsFieldDeltas
        do {
            let engine = try await Self.openEngine(
                version: device.version, database: device.handle, directory: device.directory,
                configuration: configuration)
            device.engine = engine
            device.events = EventLog(engine.events)
            device.eventsRead = 0
            device.undecodableReported = [:]
            device.runs = 0
            device.waits = 0
        } catch {
            throw InvariantBroken(
                invariant: .journalOpens, detail: "device \(device.index) could not open its journal: \(error)")
        }
    }

    /// A device's first version of the app: 1 unless the history mixes
    /// versions, where most devices start on an older one.
    func initialVersion() -> Int {
        guard options.versions else { return 1 }
        return random.weighted([(1, 5), (2, 3), (3, 2)]) ?? 1
    }

    // MARK: Bookkeeping

    func record(_ line: String) {
        log.append("#\(stats.operations) t=\(clock.now.offset) \(line)")
    }

    func nextTick() -> Int {
        tick += 1
        return tick
    }

    func freshValue(_ field: SimField) -> String {
        serial += 1
        return field.fresh(serial)
    }

    /// A fresh value; one a participant writes carries their name (all but
    /// the count) and is remembered with it.
    func freshValue(_ field: SimField, by participant: String?) -> String {
        guard let participant else { return freshValue(field) }
        serial += 1
        let value = field.fresh(serial, writer: participant)
        sharingOracle.wrote(value, by: participant)
        return value
    }

    /// Waits a moment for the engine without moving the clock: yields
    /// first, then short real pauses, and gives up after about ten seconds.
    func idle(_ spins: inout Int, _ what: String) async throws {
        spins += 1
        guard spins <= 100_000 else {
            throw InvariantBroken(invariant: .stalled, detail: "\(what) neither finished nor waited on the clock")
        }
        if spins < 1_000 {
            await Task.yield()
        } else {
            try? await Task.sleep(for: .microseconds(100))
        }
    }

    /// The weights of the operations not switched off.
    func enabled(_ weights: [(SimulationOperation, Int)]) -> [(SimulationOperation, Int)] {
        weights.map { ($0.0, options.disabled.contains($0.0) ? 0 : $0.1) }
    }
}
