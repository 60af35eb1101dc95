import Cumulus
import CumulusServerCore

/// What the in-memory server knows about its handles and the faults a test
/// injected: state that synchronous calls reach (a handle's ``InMemoryCloudDatabase/notifications()``,
/// ``InMemoryCloudDatabase/signOut()``, ``InMemoryCloudServer/inject(_:count:on:)``),
/// so it lives behind a lock rather than in the server actor.
final class ServerControls: Sendable {
    typealias Continuation = AsyncStream<CloudNotification>.Continuation

    struct PendingFault: Sendable {
        var fault: InjectedFault
        var remaining: Int
        var requests: Set<CloudRequestKind>?

        func applies(to kind: CloudRequestKind) -> Bool {
            requests?.contains(kind) ?? true
        }
    }

    struct Handle: Sendable {
        var scope: DatabaseScope
        var environment: CloudEnvironment
        var account: String?
        /// How many times the account changed.
        var generation: UInt64 = 0
        var faults: [PendingFault] = []
        var latency: Duration?
        var streams: [Int: Continuation] = [:]
    }

    /// A signed-in handle with open notification streams.
    struct Listener: Sendable {
        var account: String
        var streams: [Continuation]
    }

    struct State: Sendable {
        var nextID = 0
        var handles: [Int: Handle] = [:]
        var faults: [PendingFault] = []
        var latency: Duration = .zero
        var quotaExceededUsers: Set<String> = []
        var requestCounts: [CloudRequestKind: Int] = [:]

        mutating func makeID() -> Int {
            nextID += 1
            return nextID
        }
    }

    private let state = LockedState(State())

    // MARK: Handles

    func registerHandle(scope: DatabaseScope, environment: CloudEnvironment, account: String?) -> Int {
        state.withLock { state in
            let id = state.makeID()
            state.handles[id] = Handle(scope: scope, environment: environment, account: account)
            return id
        }
    }

    /// Forgets a handle and ends its notification streams.
    func removeHandle(_ id: Int) {
        let streams = state.withLock { $0.handles.removeValue(forKey: id)?.streams.values.map { $0 } ?? [] }
        for stream in streams { stream.finish() }
    }

    func account(of id: Int) -> String? {
        state.withLock { $0.handles[id]?.account }
    }

    /// The handle's account and its generation, read together.
    func accountAndGeneration(of id: Int) -> (account: String?, generation: UInt64) {
        state.withLock { ($0.handles[id]?.account, $0.handles[id]?.generation ?? 0) }
    }

    /// Signs the handle in as `account` (or out, for `nil`); its streams
    /// hear `.accountChanged` when that changes who is signed in.
    func setAccount(_ account: String?, of id: Int) {
        let streams = state.withLock { state -> [Continuation] in
            guard let handle = state.handles[id], handle.account != account else { return [] }
            state.handles[id]?.account = account
            state.handles[id]?.generation += 1
            return Array(handle.streams.values)
        }
        for stream in streams { stream.yield(.accountChanged) }
    }

    // MARK: Notification streams

    /// Registers a stream of the handle; `nil` (the stream should end) if the
    /// handle is gone.
    func addStream(_ continuation: Continuation, to id: Int) -> Int? {
        state.withLock { state in
            guard state.handles[id] != nil else { return nil }
            let streamID = state.makeID()
            state.handles[id]?.streams[streamID] = continuation
            return streamID
        }
    }

    func removeStream(_ streamID: Int, from id: Int) {
        state.withLock { _ = $0.handles[id]?.streams.removeValue(forKey: streamID) }
    }

    var streamCount: Int {
        state.withLock { $0.handles.values.reduce(0) { $0 + $1.streams.count } }
    }

    /// The signed-in handles of `scope` in `environment` that have streams open.
    func listeners(in scope: DatabaseScope, environment: CloudEnvironment) -> [Listener] {
        state.withLock { state in
            state.handles.keys.sorted().compactMap { id in
                guard let handle = state.handles[id], handle.scope == scope, handle.environment == environment,
                    let account = handle.account, !handle.streams.isEmpty
                else { return nil }
                return Listener(
                    account: account, streams: handle.streams.keys.sorted().compactMap { handle.streams[$0] })
            }
        }
    }

    // MARK: Faults

    /// Queues `fault` for the next `count` requests (of `requests`, or any):
    /// those of the handle `id`, or of every handle when `id` is `nil`.
    func inject(_ fault: InjectedFault, count: Int, on requests: Set<CloudRequestKind>?, handle id: Int?) {
        guard count > 0 else { return }
        let pending = PendingFault(fault: fault, remaining: count, requests: requests)
        state.withLock { state in
            if let id {
                state.handles[id]?.faults.append(pending)
            } else {
                state.faults.append(pending)
            }
        }
    }

    func removeFaults(handle id: Int?) {
        state.withLock { state in
            if let id {
                state.handles[id]?.faults.removeAll()
            } else {
                state.faults.removeAll()
            }
        }
    }

    /// Takes the fault the next request of this kind from this handle meets:
    /// the handle's own first, then the server's, each queue first in, first out.
    func takeFault(for kind: CloudRequestKind, handle id: Int) -> InjectedFault? {
        state.withLock { state in
            if var faults = state.handles[id]?.faults, let fault = Self.take(kind, from: &faults) {
                state.handles[id]?.faults = faults
                return fault
            }
            return Self.take(kind, from: &state.faults)
        }
    }

    private static func take(_ kind: CloudRequestKind, from faults: inout [PendingFault]) -> InjectedFault? {
        guard let index = faults.firstIndex(where: { $0.applies(to: kind) }) else { return nil }
        let fault = faults[index].fault
        faults[index].remaining -= 1
        if faults[index].remaining == 0 { faults.remove(at: index) }
        return fault
    }

    // MARK: Latency, quotas, counts

    func setLatency(_ latency: Duration?, handle id: Int?) {
        state.withLock { state in
            if let id {
                state.handles[id]?.latency = latency
            } else {
                state.latency = latency ?? .zero
            }
        }
    }

    /// Counts a request and answers how long it takes to reach the server.
    func beginRequest(_ kind: CloudRequestKind, handle id: Int) -> Duration {
        state.withLock { state in
            state.requestCounts[kind, default: 0] += 1
            return state.handles[id]?.latency ?? state.latency
        }
    }

    func requestCount(of kind: CloudRequestKind?) -> Int {
        state.withLock { state in
            if let kind { return state.requestCounts[kind] ?? 0 }
            return state.requestCounts.values.reduce(0, +)
        }
    }

    func resetRequestCounts() {
        state.withLock { $0.requestCounts.removeAll() }
    }

    func setQuotaExceeded(_ exceeded: Bool, for user: String) {
        state.withLock { state in
            if exceeded {
                state.quotaExceededUsers.insert(user)
            } else {
                state.quotaExceededUsers.remove(user)
            }
        }
    }

    func isQuotaExceeded(for user: String) -> Bool {
        state.withLock { $0.quotaExceededUsers.contains(user) }
    }
}
