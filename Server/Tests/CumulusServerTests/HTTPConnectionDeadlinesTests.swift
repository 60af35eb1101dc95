import NIOCore
import Testing

@testable import CumulusServer

@Suite("HTTP connection deadlines")
struct HTTPConnectionDeadlinesTests {
    static func deadlines() -> ConnectionDeadlines {
        ConnectionDeadlines(head: .seconds(10), body: .seconds(60), idle: .seconds(75))
    }

    static func at(_ seconds: Int64) -> NIODeadline {
        .uptimeNanoseconds(UInt64(1_000_000_000 + seconds * 1_000_000_000))
    }

    @Test("idle until the first byte, then the head from that byte, the body from the head, nothing while answering")
    func oneRequest() {
        var state = Self.deadlines()
        #expect(state.opened(now: Self.at(0)) == .schedule(Self.at(75)))
        #expect(state.bytesArrived(now: Self.at(5)) == .schedule(Self.at(15)))
        // More bytes of the same head keep its deadline.
        #expect(state.bytesArrived(now: Self.at(8)) == .none)
        #expect(state.headRead(now: Self.at(9)) == .schedule(Self.at(69)))
        #expect(state.bytesArrived(now: Self.at(20)) == .none)
        #expect(state.bodyEnded(now: Self.at(30)) == .cancel)
        #expect(state.runningPhase == nil)
        #expect(state.answerEnded(now: Self.at(100)) == .schedule(Self.at(175)))
        #expect(state.runningPhase == .idle)
    }

    @Test("a timer that fires early is moved to the deadline; one that fires late expires its phase")
    func timerFiring() {
        var state = Self.deadlines()
        _ = state.opened(now: Self.at(0))
        _ = state.bytesArrived(now: Self.at(1))
        #expect(state.timerFired(now: Self.at(5)) == .schedule(Self.at(11)))
        #expect(state.timerFired(now: Self.at(11)) == .expire(.head))
        #expect(state.runningPhase == nil)
        #expect(state.timerFired(now: Self.at(12)) == .none)
    }

    @Test("a long answer (a notification poll) runs no deadline however long it takes")
    func longAnswer() {
        var state = Self.deadlines()
        _ = state.opened(now: Self.at(0))
        _ = state.bytesArrived(now: Self.at(0))
        _ = state.headRead(now: Self.at(0))
        _ = state.bodyEnded(now: Self.at(0))
        #expect(state.timerFired(now: Self.at(1000)) == .none)
        #expect(state.answerEnded(now: Self.at(1000)) == .schedule(Self.at(1075)))
    }

    @Test("an early answer leaves the body deadline running while the rest of the body is drained")
    func earlyAnswer() {
        var state = Self.deadlines()
        _ = state.opened(now: Self.at(0))
        _ = state.bytesArrived(now: Self.at(0))
        #expect(state.headRead(now: Self.at(1)) == .schedule(Self.at(61)))
        #expect(state.answerEnded(now: Self.at(2)) == .none)
        #expect(state.runningPhase == .body)
        #expect(state.bodyEnded(now: Self.at(3)) == .schedule(Self.at(78)))
        #expect(state.runningPhase == .idle)
    }

    @Test("a pipelined request's deadlines wait for the answer before it")
    func pipelined() {
        var state = Self.deadlines()
        _ = state.opened(now: Self.at(0))
        _ = state.bytesArrived(now: Self.at(0))
        _ = state.headRead(now: Self.at(0))
        #expect(state.bodyEnded(now: Self.at(0)) == .cancel)
        #expect(state.bytesArrived(now: Self.at(1)) == .none)
        #expect(state.headRead(now: Self.at(2)) == .none)
        #expect(state.openRequests == 2)
        #expect(state.answerEnded(now: Self.at(50)) == .schedule(Self.at(110)))
        #expect(state.runningPhase == .body)
    }

    @Test("a body earns the time its bytes take at the minimum rate, but not past a stall")
    func bodyRate() {
        // 60 s for the body, and one more second for every 1,000 bytes.
        var state = ConnectionDeadlines(
            head: .seconds(10), body: .seconds(60), idle: .seconds(75), minimumBodyRate: 1000)
        _ = state.opened(now: Self.at(0))
        _ = state.bytesArrived(now: Self.at(0))
        #expect(state.headRead(now: Self.at(0)) == .schedule(Self.at(60)))
        // 50,000 bytes in the first 50 s earn 50 s: the deadline is 110 s, which
        // the timer, firing at 60 s, moves to.
        for second in 1...50 { #expect(state.bodyRead(1000, now: Self.at(Int64(second))) == .none) }
        #expect(state.timerFired(now: Self.at(60)) == .schedule(Self.at(110)))
        // A stall: nothing more arrives; it expires 60 s after the last bytes,
        // not at what more bytes would have earned.
        #expect(state.timerFired(now: Self.at(110)) == .expire(.body))

        // Without a rate, the bytes earn nothing.
        var fixed = Self.deadlines()
        _ = fixed.opened(now: Self.at(0))
        _ = fixed.bytesArrived(now: Self.at(0))
        _ = fixed.headRead(now: Self.at(0))
        #expect(fixed.bodyRead(1_000_000, now: Self.at(30)) == .none)
        #expect(fixed.timerFired(now: Self.at(60)) == .expire(.body))
    }

    @Test("a fast body's deadline is a body timeout after its last bytes")
    func bodyStall() {
        var state = ConnectionDeadlines(
            head: .seconds(10), body: .seconds(60), idle: .seconds(75), minimumBodyRate: 1000)
        _ = state.opened(now: Self.at(0))
        _ = state.bytesArrived(now: Self.at(0))
        _ = state.headRead(now: Self.at(0))
        // A million bytes at once would earn 1,000 s; the stall rule keeps it to 60 s after them.
        _ = state.bodyRead(1_000_000, now: Self.at(10))
        #expect(state.timerFired(now: Self.at(60)) == .schedule(Self.at(70)))
        #expect(state.timerFired(now: Self.at(70)) == .expire(.body))
    }
}
