import Cumulus
import Foundation
import Logging
import Testing

@testable import CumulusServer

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// PostgreSQL goes away while requests are in flight through two servers,
/// directly and over HTTP: every request is answered within the storage's
/// bounds (503 `TRY_AGAIN_LATER` while it is away), every acknowledged write
/// survives, and a write answered without "outcome is unknown" never
/// appears later.
///
/// Each test runs its own cluster (``PostgresCluster``), since the shared
/// one must not be stopped.
@Suite(
    "PostgreSQL outage with requests in flight", .serialized,
    .enabled(if: PostgresTestDatabase.isEnabled && PostgresCluster.binaries != nil))
struct PostgresInFlightOutageTests {
    @Test(
        "PostgreSQL stopped under load: each request answers within the connection wait; acknowledged writes survive",
        arguments: [PostgresCluster.StopMode.immediate, .fast])
    func stoppedUnderLoad(_ mode: PostgresCluster.StopMode) async throws {
        let limits = PostgresStorage.Limits(
            connectionWait: .seconds(3), statementTimeout: .seconds(4), transactionTimeout: .seconds(6),
            retryAfter: .seconds(1))
        try await OutageRig.with(limits: limits) { rig in
            let report = try await rig.load {
                try await rig.cluster.stop(mode)
                try await Task.sleep(for: .seconds(3))
                try await rig.cluster.startAgain()
            }
            // The slack is for late timers in a full parallel run on two cores; a hang is 30 s.
            try await rig.check(report, answeredWithin: limits.connectionWait + .seconds(4))
        }
    }

    @Test("PostgreSQL frozen under load: the deadline answers 503; nothing answered uncommitted commits after the thaw")
    func frozenUnderLoad() async throws {
        let limits = PostgresStorage.Limits(
            connectionWait: .seconds(2), statementTimeout: .seconds(3), transactionTimeout: .seconds(4),
            retryAfter: .seconds(1))
        try await OutageRig.with(limits: limits) { rig in
            let report = try await rig.load {
                let frozen = try await rig.cluster.freeze()
                try? await Task.sleep(for: .seconds(6))
                try await rig.cluster.thaw(frozen)
            }
            try await rig.check(report, answeredWithin: limits.transactionTimeout + .seconds(4))
        }
    }
}

/// Two services on a private cluster, the second also behind HTTP, and the
/// load that runs through them while the cluster goes away.
final class OutageRig: Sendable {
    let cluster: PostgresCluster
    let services: [CloudService]
    let limits: PostgresStorage.Limits
    let baseURL: URL
    let httpQuery: [String: String]
    let httpCaller: Caller
    let serviceCaller = caller("alice")

    /// How long the load waits for one answer before it reports the request
    /// as never answered (longer than every bound the tests check).
    static let watchLimit = Duration.seconds(30)

    private init(
        cluster: PostgresCluster, services: [CloudService], limits: PostgresStorage.Limits, baseURL: URL,
        httpQuery: [String: String], httpCaller: Caller
    ) {
        self.cluster = cluster
        self.services = services
        self.limits = limits
        self.baseURL = baseURL
        self.httpQuery = httpQuery
        self.httpCaller = httpCaller
    }

    /// Runs `body` with a rig on a fresh cluster, removed afterwards.
    static func with(limits: PostgresStorage.Limits, _ body: @Sendable (OutageRig) async throws -> Void) async throws {
        let cluster = try await PostgresCluster.start()
        var services: [CloudService] = []
        do {
            for _ in 0..<2 {
                let storage = try await PostgresStorage(
                    url: cluster.url, maximumConnections: 4, limits: limits, logger: quietLogger)
                services.append(CloudService(storage: storage))
            }
            let token = try await services[0].addContainer(named: "iCloud.http")
            let user = try await services[0].addUser(named: "alice", container: "iCloud.http")
            try await services[0].createZone(as: caller("alice"))
            _ = try await services[0].modify([RecordOperation(.create, note("seed"))], as: caller("alice"))
            let server = CumulusHTTPServer(
                service: services[1], configuration: ServerConfiguration(port: 0, logger: quietLogger))
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run { port in continuation.yield(port) } }
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else { throw CloudError(.internalError, reason: "no port") }
                let rig = OutageRig(
                    cluster: cluster, services: services, limits: limits,
                    baseURL: URL(string: "http://127.0.0.1:\(port)")!,
                    httpQuery: ["ckAPIToken": token, "ckWebAuthToken": user.webAuthToken],
                    httpCaller: Caller(
                        container: "iCloud.http", environment: .development, scope: .private,
                        user: user.userRecordName))
                defer { group.cancelAll() }
                let zone = try await rig.http(
                    "zones/modify",
                    #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Notes"}}}]}"#)
                #expect(zone.status == 200)
                try await body(rig)
            }
        } catch {
            await tearDown(services, cluster)
            throw error
        }
        await tearDown(services, cluster)
    }

    /// Closes the services (a hung close is not waited for) and removes the cluster.
    private static func tearDown(_ services: [CloudService], _ cluster: PostgresCluster) async {
        for service in services {
            _ = await watched(.seconds(20)) { try? await service.close() }
        }
        await cluster.remove()
    }

    // MARK: Load

    /// One request and what came of it.
    struct Outcome: Sendable {
        enum Answer: Sendable {
            case acknowledged
            /// An error dictionary: its code, reason, whether it said when to
            /// retry, and its HTTP status.
            case failed(code: String, reason: String, retryAfter: Bool, status: Int)
            /// Anything else (a transport error, a per-record failure).
            case other(String)
        }

        var via: String
        /// The record a write created, and whose it is.
        var written: (name: String, caller: Caller)?
        var start: ContinuousClock.Instant
        /// `nil` when no answer came within ``OutageRig/watchLimit``.
        var end: ContinuousClock.Instant?
        var answer: Answer?
    }

    struct Report: Sendable {
        var outcomes: [Outcome]
        /// When the outage began.
        var outageStart: ContinuousClock.Instant
    }

    /// Keeps writers and readers busy through both services and HTTP, runs
    /// `outage` after a second, and stops them a few seconds after it.
    func load(outage: @Sendable () async throws -> Void) async throws -> Report {
        let running = LockedState(true)
        let outcomes = LockedState<[Outcome]>([])
        let loops: [(String, @Sendable (Int) async -> Outcome)] = [
            ("service 0 write", { n in await self.serviceWrite(0, "a\(n)") }),
            ("service 0 write", { n in await self.serviceWrite(0, "b\(n)") }),
            ("service 1 write", { n in await self.serviceWrite(1, "c\(n)") }),
            ("service 1 write", { n in await self.serviceWrite(1, "d\(n)") }),
            ("service 0 read", { _ in await self.serviceRead(0) }),
            ("service 1 read", { _ in await self.serviceRead(1) }),
            ("http write", { n in await self.httpWrite("e\(n)") }),
            ("http write", { n in await self.httpWrite("f\(n)") }),
            ("http read", { _ in await self.httpRead() }),
        ]
        let outageStart = LockedState(ContinuousClock.now)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (via, request) in loops {
                group.addTask {
                    var number = 0
                    while running.withLock({ $0 }) {
                        number += 1
                        let start = ContinuousClock.now
                        let current = number
                        let outcome =
                            await Self.watched(Self.watchLimit) { await request(current) }
                            ?? Outcome(via: via, written: nil, start: start, end: nil, answer: nil)
                        outcomes.withLock { $0.append(outcome) }
                        if case .acknowledged = outcome.answer {
                        } else {
                            // No busy loop while every request fails at once.
                            try? await Task.sleep(for: .milliseconds(50))
                        }
                    }
                }
            }
            try await Task.sleep(for: .seconds(1))
            outageStart.withLock { $0 = .now }
            do {
                try await outage()
                try await Task.sleep(for: .seconds(3))
            } catch {
                running.withLock { $0 = false }
                throw error
            }
            running.withLock { $0 = false }
            try await group.waitForAll()
        }
        return Report(outcomes: outcomes.withLock { $0 }, outageStart: outageStart.withLock { $0 })
    }

    private func serviceWrite(_ index: Int, _ name: String) async -> Outcome {
        let name = "s\(index)-\(name)"
        var outcome = Outcome(via: "service \(index) write", written: (name, serviceCaller), start: .now)
        do {
            let results = try await services[index].modify([RecordOperation(.create, note(name))], as: serviceCaller)
            if case .record = results.first {
                outcome.answer = .acknowledged
            } else {
                outcome.answer = .other("\(results)")
            }
        } catch {
            outcome.answer = Self.answer(error)
        }
        outcome.end = .now
        return outcome
    }

    private func serviceRead(_ index: Int) async -> Outcome {
        var outcome = Outcome(via: "service \(index) read", start: .now)
        do {
            let results = try await services[index].lookup(["seed"], as: serviceCaller)
            if case .record = results.first {
                outcome.answer = .acknowledged
            } else {
                outcome.answer = .other("\(results)")
            }
        } catch {
            outcome.answer = Self.answer(error)
        }
        outcome.end = .now
        return outcome
    }

    private func httpWrite(_ name: String) async -> Outcome {
        let name = "h-\(name)"
        var outcome = Outcome(via: "http write", written: (name, httpCaller), start: .now)
        let record = #"{"recordName":"\#(name)","recordType":"Note","fields":{"title":{"value":"t"}}}"#
        outcome.answer = await httpAnswer(
            "records/modify",
            #"{"zoneID":{"zoneName":"Notes"},"operations":[{"operationType":"create","record":\#(record)}]}"#)
        outcome.end = .now
        return outcome
    }

    private func httpRead() async -> Outcome {
        var outcome = Outcome(via: "http read", start: .now)
        outcome.answer = await httpAnswer(
            "records/lookup", #"{"zoneID":{"zoneName":"Notes"},"records":[{"recordName":"seed"}]}"#)
        outcome.end = .now
        return outcome
    }

    private func httpAnswer(_ operation: String, _ body: String) async -> Outcome.Answer {
        do {
            let answer = try await http(operation, body)
            guard answer.status == 200 else {
                return .failed(
                    code: answer.serverErrorCode ?? "", reason: answer.reason ?? "",
                    retryAfter: answer.retryAfter != nil, status: answer.status)
            }
            // A lookup of a record the HTTP user does not have answers NOT_FOUND per record: still an answer.
            if operation == "records/modify", let first = (answer.json["records"] as? [[String: Any]])?.first,
                first["serverErrorCode"] != nil
            {
                return .other("\(first)")
            }
            return .acknowledged
        } catch {
            return .other("\(error)")
        }
    }

    /// Sends one request as the HTTP user.
    func http(_ operation: String, _ body: String) async throws -> HTTPAnswer {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)!
        components.path = "/database/1/iCloud.http/development/private/\(operation)"
        components.queryItems = httpQuery.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        var request = URLRequest(url: components.url!)
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.timeoutInterval = 120
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return HTTPAnswer(
            status: http.statusCode, body: data, contentType: http.value(forHTTPHeaderField: "Content-Type"),
            retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
    }

    private static func answer(_ error: any Error) -> Outcome.Answer {
        guard let error = error as? CloudError else { return .other(String(reflecting: error)) }
        return .failed(
            code: error.code.rawValue, reason: error.reason, retryAfter: error.retryAfter != nil,
            status: Int(HTTPFailure(error).response().status.code))
    }

    /// Runs `body` in a task of its own and waits at most `limit` for it:
    /// a request that storage never answers is reported, not waited for.
    static func watched<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let waiting = LockedState<CheckedContinuation<T?, Never>?>(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                waiting.withLock { $0.take() }?.resume(returning: nil)
            }
            Task {
                let value = await body()
                waiting.withLock { $0.take() }?.resume(returning: value)
                timer.cancel()
            }
        }
    }

    // MARK: Checks

    /// Every request answered within `bound`, every failure a 503
    /// `TRY_AGAIN_LATER` with a retry time; after the outage every
    /// acknowledged write is there, every write refused without "outcome is
    /// unknown" is not, and each service answers a burst larger than its pool.
    func check(_ report: Report, answeredWithin bound: Duration) async throws {
        let outcomes = report.outcomes
        let unanswered = outcomes.filter { $0.end == nil }
        #expect(
            unanswered.isEmpty,
            "never answered: \(unanswered.map { "\($0.via) sent \($0.start - report.outageStart) after the outage began" })"
        )
        let slow = outcomes.filter { outcome in outcome.end.map { $0 - outcome.start > bound } ?? false }
        #expect(slow.isEmpty, "answered later than \(bound): \(slow.map { "\($0.via): \($0.end! - $0.start)" })")
        let inFlight = outcomes.filter { $0.start < report.outageStart && ($0.end ?? .now) > report.outageStart }
        #expect(!inFlight.isEmpty, "no request was in flight when the outage began")
        var refused: [Outcome] = []
        var failures = 0
        for outcome in outcomes {
            switch outcome.answer {
            case .failed(let code, let reason, let retryAfter, let status):
                failures += 1
                #expect(
                    code == CloudError.Code.tryAgainLater.rawValue && retryAfter && status == 503,
                    "\(outcome.via): \(code) \(status) \(reason)")
                if !reason.contains("outcome is unknown") { refused.append(outcome) }
            case .other(let text):
                Issue.record("\(outcome.via): \(text)")
            case .acknowledged, nil:
                break
            }
        }
        #expect(failures > 0, "no request saw the outage")

        try await waitUntilAvailable()
        let acknowledged = outcomes.filter { outcome in
            if case .acknowledged = outcome.answer { return outcome.written != nil }
            return false
        }
        for outcome in acknowledged {
            let (name, owner) = outcome.written!
            guard case .record = try await services[0].lookup([name], as: owner).first else {
                Issue.record("the acknowledged write of \(name) (\(outcome.via)) is lost")
                continue
            }
        }
        for outcome in refused {
            guard let (name, owner) = outcome.written else { continue }
            if case .record = try await services[0].lookup([name], as: owner).first {
                Issue.record("\(name) (\(outcome.via)) was refused with nothing committed, yet it is there")
            }
        }
        // A leaked connection lease would leave the pools of four unable to serve these.
        for service in services {
            let burst = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        let results = await Self.watched(bound) {
                            try? await service.lookup(["seed"], as: self.serviceCaller)
                        }
                        if case .record = results??.first { return true }
                        return false
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(burst == 16, "only \(burst) of 16 lookups after the outage were answered")
        }
    }

    /// Waits (30 s at most) for both services to read again after the outage.
    private func waitUntilAvailable() async throws {
        let giveUp = ContinuousClock.now + .seconds(30)
        for service in services {
            while true {
                let results = await Self.watched(.seconds(5)) {
                    try? await service.lookup(["seed"], as: self.serviceCaller)
                }
                if case .record = results??.first { break }
                guard ContinuousClock.now < giveUp else {
                    Issue.record("a service did not recover after the outage")
                    return
                }
                try await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}
