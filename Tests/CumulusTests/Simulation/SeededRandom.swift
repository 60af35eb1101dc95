import Foundation

/// SplitMix64: a small, fast, seeded generator, so that one number replays
/// a whole history.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `range`.
    mutating func int(in range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &self)
    }

    /// `true` with probability `probability`.
    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    /// One element of a non-empty collection.
    mutating func pick<C: Collection>(_ elements: C) -> C.Element {
        precondition(!elements.isEmpty, "Internal inconsistency: picking from nothing")
        let offset = Int.random(in: 0..<elements.count, using: &self)
        return elements[elements.index(elements.startIndex, offsetBy: offset)]
    }

    /// One key, chosen with probability proportional to its weight; `nil`
    /// when every weight is zero.
    mutating func weighted<Key>(_ choices: [(Key, Int)]) -> Key? {
        let total = choices.reduce(0) { $0 + max(0, $1.1) }
        guard total > 0 else { return nil }
        var roll = Int.random(in: 0..<total, using: &self)
        for (key, weight) in choices where weight > 0 {
            if roll < weight { return key }
            roll -= weight
        }
        return nil
    }
}

/// The backoff jitter of one engine, drawn from its own seed so that a
/// history's waits replay exactly.
final class SeededJitter: @unchecked Sendable {
    // Safety: `random` is only touched under `lock`.
    private let lock = NSLock()
    private var random: SeededRandom

    init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    /// A number in `0..<1`.
    func next() -> Double {
        lock.withLock { Double.random(in: 0..<1, using: &random) }
    }
}
