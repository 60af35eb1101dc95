/// A region where two token sequences differ: `old` in the first is
/// replaced by `new` in the second. Either range may be empty (an insertion
/// or a deletion), never both.
struct DiffHunk: Equatable {
    var old: Range<Int>
    var new: Range<Int>
}

/// Eugene Myers' O(N·D) difference algorithm ("An O(ND) Difference
/// Algorithm and Its Variations", 1986), in its linear-space form: each
/// step finds the middle snake of an optimal path and recurses on both
/// halves, so memory stays proportional to N + M however far apart the
/// sequences are.
enum MyersDiff {
    /// The hunks that turn `old` into `new`, in order, each as large as it
    /// can be (two hunks always have an unchanged token between them); `nil`
    /// when the two differ by more than `maximumCost` insertions and
    /// deletions, so that a caller can bound the O(N·D) time.
    static func hunks(_ old: [Int], _ new: [Int], maximumCost: Int = .max) -> [DiffHunk]? {
        var oldChanged = [Bool](repeating: false, count: old.count)
        var newChanged = [Bool](repeating: false, count: new.count)
        let finished = old.withUnsafeBufferPointer { a in
            new.withUnsafeBufferPointer { b in
                oldChanged.withUnsafeMutableBufferPointer { aMarks in
                    newChanged.withUnsafeMutableBufferPointer { bMarks in
                        var search = Search(a: a, b: b, aChanged: aMarks, bChanged: bMarks)
                        return search.compare(0, old.count, 0, new.count, maximumCost: maximumCost)
                    }
                }
            }
        }
        guard finished else { return nil }
        return collect(oldChanged, newChanged)
    }

    /// Walks the marks of both sequences: unchanged tokens pair up in order
    /// (they are a common subsequence), changed ones between them form hunks.
    private static func collect(_ oldChanged: [Bool], _ newChanged: [Bool]) -> [DiffHunk] {
        var hunks: [DiffHunk] = []
        var i = 0
        var j = 0
        while i < oldChanged.count || j < newChanged.count {
            if i < oldChanged.count, j < newChanged.count, !oldChanged[i], !newChanged[j] {
                i += 1
                j += 1
                continue
            }
            let start = (i, j)
            while i < oldChanged.count, oldChanged[i] { i += 1 }
            while j < newChanged.count, newChanged[j] { j += 1 }
            guard (i, j) != start else {
                preconditionFailure("Internal inconsistency: the unchanged tokens of a diff do not pair up")
            }
            hunks.append(DiffHunk(old: start.0..<i, new: start.1..<j))
        }
        return hunks
    }

    /// The recursion's state: both sequences and the marks it sets.
    private struct Search {
        let a: UnsafeBufferPointer<Int>
        let b: UnsafeBufferPointer<Int>
        let aChanged: UnsafeMutableBufferPointer<Bool>
        let bChanged: UnsafeMutableBufferPointer<Bool>

        /// Marks the changed tokens of `a[aLow..<aHigh]` against
        /// `b[bLow..<bHigh]`; `false` when they differ by more than `maximumCost`.
        mutating func compare(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int, maximumCost: Int) -> Bool {
            var (aLow, aHigh, bLow, bHigh) = (aLow, aHigh, bLow, bHigh)
            // A common prefix and suffix cost nothing: most real edits leave
            // most of a text alone, so this usually does the bulk of the work.
            while aLow < aHigh, bLow < bHigh, a[aLow] == b[bLow] {
                aLow += 1
                bLow += 1
            }
            while aLow < aHigh, bLow < bHigh, a[aHigh - 1] == b[bHigh - 1] {
                aHigh -= 1
                bHigh -= 1
            }
            if aLow == aHigh || bLow == bHigh {
                guard (aHigh - aLow) + (bHigh - bLow) <= maximumCost else { return false }
                for i in aLow..<aHigh { aChanged[i] = true }
                for j in bLow..<bHigh { bChanged[j] = true }
                return true
            }
            switch middleSnake(aLow, aHigh, bLow, bHigh, maximumCost: maximumCost) {
            case .tooCostly:
                return false
            case .split(let x, let y) where (x, y) != (aLow, bLow) && (x, y) != (aHigh, bHigh):
                // Both halves are strictly smaller problems (trimmed ranges
                // that both hold tokens differ by at least 2), and the whole
                // cost was within the bound, so neither half needs one.
                _ = compare(aLow, x, bLow, y, maximumCost: .max)
                _ = compare(x, aHigh, y, bHigh, maximumCost: .max)
                return true
            case .split:
                // A split at a corner would recurse forever; it cannot happen
                // for trimmed ranges, and replacing the whole range is still a
                // correct (if longer) answer.
                assertionFailure("Internal inconsistency: a middle snake at a corner of the diff")
                fallthrough
            case .disjoint:
                guard (aHigh - aLow) + (bHigh - bLow) <= maximumCost else { return false }
                for i in aLow..<aHigh { aChanged[i] = true }
                for j in bLow..<bHigh { bChanged[j] = true }
                return true
            }
        }

        /// What the search for a middle snake found.
        private enum Snake {
            /// A point on an optimal path.
            case split(Int, Int)
            /// No token is common to both ranges: the whole range is replaced.
            case disjoint
            /// The path costs more than the bound.
            case tooCostly
        }

        /// A point on an optimal path, where the forward search from the
        /// start meets the backward search from the end.
        ///
        /// `forward[k]` is the furthest `x` reached on diagonal `k = x - y`;
        /// `backward[k]` the same counted from the end.
        private func middleSnake(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int, maximumCost: Int) -> Snake {
            let n = aHigh - aLow
            let m = bHigh - bLow
            let maxD = (n + m + 1) / 2
            let offset = maxD
            let length = 2 * maxD + 2
            var forward = [Int](repeating: -1, count: length)
            var backward = [Int](repeating: -1, count: length)
            forward[offset + 1] = 0
            backward[offset + 1] = 0
            let delta = n - m
            // With an odd delta the paths can meet while the forward one
            // advances; with an even one, while the backward one does.
            let meetsForward = delta & 1 != 0
            var forwardStart = 0
            var forwardEnd = 0
            var backwardStart = 0
            var backwardEnd = 0
            for d in 0..<maxD {
                // Reaching step d means the path costs at least 2d - 1.
                if 2 * d - 1 > maximumCost { return .tooCostly }
                var k1 = -d + forwardStart
                while k1 <= d - forwardEnd {
                    let index = offset + k1
                    var x =
                        (k1 == -d || (k1 != d && forward[index - 1] < forward[index + 1]))
                        ? forward[index + 1] : forward[index - 1] + 1
                    var y = x - k1
                    while x < n, y < m, a[aLow + x] == b[bLow + y] {
                        x += 1
                        y += 1
                    }
                    forward[index] = x
                    if x > n {
                        forwardEnd += 2  // ran off the right edge
                    } else if y > m {
                        forwardStart += 2  // ran off the bottom edge
                    } else if meetsForward {
                        let other = offset + delta - k1
                        if other >= 0, other < length, backward[other] != -1, x >= n - backward[other] {
                            return .split(aLow + x, bLow + y)
                        }
                    }
                    k1 += 2
                }
                var k2 = -d + backwardStart
                while k2 <= d - backwardEnd {
                    let index = offset + k2
                    var x =
                        (k2 == -d || (k2 != d && backward[index - 1] < backward[index + 1]))
                        ? backward[index + 1] : backward[index - 1] + 1
                    var y = x - k2
                    while x < n, y < m, a[aHigh - x - 1] == b[bHigh - y - 1] {
                        x += 1
                        y += 1
                    }
                    backward[index] = x
                    if x > n {
                        backwardEnd += 2
                    } else if y > m {
                        backwardStart += 2
                    } else if !meetsForward {
                        // With an even delta the cost is even: at least 2d from here.
                        guard 2 * d <= maximumCost else { return .tooCostly }
                        let other = offset + delta - k2
                        if other >= 0, other < length, forward[other] != -1 {
                            let forwardX = forward[other]
                            let forwardY = forwardX - (other - offset)
                            if forwardX >= n - x { return .split(aLow + forwardX, bLow + forwardY) }
                        }
                    }
                    k2 += 2
                }
            }
            // The searches did not meet: nothing is common to both ranges.
            return .disjoint
        }
    }
}
