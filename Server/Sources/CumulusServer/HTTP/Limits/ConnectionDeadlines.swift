import NIOCore

/// The timeouts of one HTTP connection: what happens on the connection
/// goes in, and what to do with its one timer comes out.
///
/// At most one deadline runs at a time:
/// - ``Phase/idle``: no request is open and no byte of the next one came;
/// - ``Phase/head``: from the first byte of a request to the end of its head;
/// - ``Phase/body``: from the end of the head to the end of the body; a
///   body that keeps arriving at ``minimumBodyRate`` or faster earns the
///   time its bytes take at that rate (a large upload on a slow link), but
///   never waits longer than the body limit for its next bytes.
///
/// None runs while a request that was read is being answered, so a
/// notification long poll, which waits in the server, is never cut. While
/// an earlier request is still answered, a pipelined one's head and body
/// deadlines wait too, since the server may not be reading it yet.
struct ConnectionDeadlines {
    /// Which of the three limits a deadline enforces.
    enum Phase: Equatable, Sendable {
        case idle
        case head
        case body
    }

    /// What the timer should do next.
    enum Action: Equatable {
        /// Nothing changes.
        case none
        /// Fire at this deadline, instead of any earlier one.
        case schedule(NIODeadline)
        /// Stop the timer: no deadline runs.
        case cancel
        /// The deadline of this phase has passed.
        case expire(Phase)
    }

    /// What the decoder has seen of the request it reads now.
    private enum Reading: Equatable {
        case awaitingHead(sawBytes: Bool)
        case body
    }

    let head: TimeAmount
    let body: TimeAmount
    let idle: TimeAmount
    /// Bytes a second; `0` gives every body the body limit and no more.
    let minimumBodyRate: Int

    /// Requests whose head was read and whose answer has not ended.
    private(set) var openRequests = 0
    private var reading = Reading.awaitingHead(sawBytes: false)
    private var running: (phase: Phase, deadline: NIODeadline)?
    /// When the running body deadline started, and the body bytes read since.
    private var bodyStart = NIODeadline.uptimeNanoseconds(0)
    private var bodyBytes: Int64 = 0

    init(head: TimeAmount, body: TimeAmount, idle: TimeAmount, minimumBodyRate: Int = 0) {
        self.head = head
        self.body = body
        self.idle = idle
        self.minimumBodyRate = minimumBodyRate
    }

    /// The phase whose deadline runs, if any.
    var runningPhase: Phase? { running?.phase }

    /// The connection opened.
    mutating func opened(now: NIODeadline) -> Action {
        update(now: now)
    }

    /// Bytes arrived, before the decoder looks at them.
    mutating func bytesArrived(now: NIODeadline) -> Action {
        if case .awaitingHead(sawBytes: false) = reading { reading = .awaitingHead(sawBytes: true) }
        return update(now: now)
    }

    /// The decoder read a request's head.
    mutating func headRead(now: NIODeadline) -> Action {
        openRequests += 1
        reading = .body
        return update(now: now)
    }

    /// The decoder read `count` bytes of a request's body: its deadline
    /// moves later by what they take at the minimum rate, up to the body
    /// limit from now. The timer is not moved: when it fires early, it is
    /// scheduled again for the deadline.
    mutating func bodyRead(_ count: Int, now: NIODeadline) -> Action {
        guard minimumBodyRate > 0, let current = running, current.phase == .body else { return .none }
        bodyBytes += Int64(count)
        // Capped at a day, far beyond any body limit.
        let earned = TimeAmount.nanoseconds(Int64(min(Double(bodyBytes) / Double(minimumBodyRate), 86_400) * 1e9))
        running = (.body, max(current.deadline, min(bodyStart + body + earned, now + body)))
        return .none
    }

    /// The decoder read the end of a request's body.
    mutating func bodyEnded(now: NIODeadline) -> Action {
        reading = .awaitingHead(sawBytes: false)
        return update(now: now)
    }

    /// The answer to the oldest open request ended.
    mutating func answerEnded(now: NIODeadline) -> Action {
        guard openRequests > 0 else {
            preconditionFailure("Internal inconsistency: an answer ended with no request open")
        }
        openRequests -= 1
        return update(now: now)
    }

    /// The timer fired; it may be late for a deadline that moved.
    mutating func timerFired(now: NIODeadline) -> Action {
        guard let running else { return .none }
        guard now >= running.deadline else { return .schedule(running.deadline) }
        self.running = nil
        return .expire(running.phase)
    }

    /// Starts the deadline of the phase the connection is in, keeping one
    /// that already runs for that phase (a head or body counts from its start).
    private mutating func update(now: NIODeadline) -> Action {
        let phase: Phase?
        switch reading {
        case .awaitingHead(let sawBytes) where openRequests == 0:
            phase = sawBytes ? .head : .idle
        case .body where openRequests <= 1:
            // At 0 the answer went out early and the rest of the body is drained.
            phase = .body
        default:
            phase = nil
        }
        guard let phase else {
            guard running != nil else { return .none }
            running = nil
            return .cancel
        }
        if running?.phase == phase { return .none }
        let deadline = now + limit(of: phase)
        running = (phase, deadline)
        if phase == .body {
            bodyStart = now
            bodyBytes = 0
        }
        return .schedule(deadline)
    }

    private func limit(of phase: Phase) -> TimeAmount {
        switch phase {
        case .idle: idle
        case .head: head
        case .body: body
        }
    }
}
