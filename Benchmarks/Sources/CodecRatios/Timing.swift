/// Times several operations back to back: each round runs every operation
/// once, in turn, so drift on a shared machine hits all of them alike; the
/// figure kept for each is the median over the rounds.
struct Timing {
    /// How many rounds to take the median of.
    var rounds = 5
    /// How long one timed run of one operation should last, at least.
    var runTime: Duration = .milliseconds(100)

    private let clock = ContinuousClock()

    /// Returns the median time of one call of each operation, in nanoseconds,
    /// or `nil` for an operation that throws (after printing the error).
    ///
    /// Each operation is warmed up, calibrated (how many calls fill
    /// ``runTime``), then timed in ``rounds`` rounds.
    func medianNanoseconds(_ named: [(name: String, operation: () throws -> Int)]) throws -> [Double?] {
        var working: [Int] = []
        for (index, entry) in named.enumerated() {
            do {
                Sink.keep(try entry.operation())
                working.append(index)
            } catch {
                print("error: \(entry.name) fails, not timed: \(error)")
            }
        }
        let times = try medianNanoseconds(working.map { named[$0].operation })
        var result: [Double?] = Array(repeating: nil, count: named.count)
        for (index, time) in zip(working, times) { result[index] = time }
        return result
    }

    /// Returns the median time of one call of each operation, in nanoseconds.
    func medianNanoseconds(_ operations: [() throws -> Int]) throws -> [Double] {
        var checksum = 0
        var repetitions: [Int] = []
        for operation in operations {
            // Warm-up: caches, lazily initialised state, page faults.
            let warmUpEnd = clock.now.advanced(by: runTime / 4)
            var calls = 0
            let start = clock.now
            repeat {
                checksum &+= try operation()
                calls += 1
            } while clock.now < warmUpEnd
            let perCall = (clock.now - start) / calls
            repetitions.append(max(1, Int((runTime / perCall).rounded(.up))))
        }
        var samples = Array(repeating: [Double](), count: operations.count)
        for _ in 0..<rounds {
            for (index, operation) in operations.enumerated() {
                let count = repetitions[index]
                let start = clock.now
                for _ in 0..<count {
                    checksum &+= try operation()
                }
                samples[index].append((clock.now - start).nanoseconds / Double(count))
            }
        }
        Sink.keep(checksum)
        return samples.map { $0.sorted()[$0.count / 2] }
    }
}

extension Duration {
    /// The duration in nanoseconds.
    var nanoseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }
}

/// Somewhere for checksums to go, so the optimiser keeps the work that made them.
enum Sink {
    // Written only from the main thread; never read. Unsafe is fine.
    nonisolated(unsafe) private static var value = 0

    @inline(never)
    static func keep(_ checksum: Int) {
        value &+= checksum
    }
}
