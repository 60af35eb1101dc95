/// One region of a three-way merge of token sequences: ranges of the
/// ancestor's tokens and of each side's.
enum MergeChunk: Equatable {
    /// Tokens of the ancestor that both sides kept.
    case unchanged(Range<Int>)
    /// Only the client changed these ancestor tokens, into `client`.
    case client(ancestor: Range<Int>, client: Range<Int>)
    /// Only the server changed these ancestor tokens, into `server`.
    case server(ancestor: Range<Int>, server: Range<Int>)
    /// Both sides changed these ancestor tokens (their changes overlap).
    case both(ancestor: Range<Int>, client: Range<Int>, server: Range<Int>)
}

/// The diff3 step: the hunks of ancestor → client and ancestor → server,
/// walked together into chunks.
enum ThreeWayMerge {
    /// The chunks of a merge, in order, covering the whole ancestor.
    ///
    /// Hunks of the two sides that overlap form one `both` chunk (with
    /// every hunk that overlaps it in turn). Hunks that only touch do not
    /// overlap: one side's change of a token and the other's change of the
    /// next are both taken, and an insertion at the edge of the other side's
    /// change goes before it (at its start) or after it (at its end). Two
    /// insertions at the same place overlap.
    static func chunks(ancestorCount: Int, client: [DiffHunk], server: [DiffHunk]) -> [MergeChunk] {
        var chunks: [MergeChunk] = []
        var clientSide = Side(hunks: client)
        var serverSide = Side(hunks: server)
        var position = 0
        while let clientStarts = clientSide.startsBefore(serverSide) {
            let clientFirst = clientSide.index
            let serverFirst = serverSide.index
            let first = clientStarts ? clientSide.take() : serverSide.take()
            var region = first.old
            // Grow the region while the next hunk of either side overlaps it.
            while true {
                if let hunk = clientSide.head, overlaps(hunk.old, region) {
                    _ = clientSide.take()
                    region = min(region.lowerBound, hunk.old.lowerBound)..<max(region.upperBound, hunk.old.upperBound)
                } else if let hunk = serverSide.head, overlaps(hunk.old, region) {
                    _ = serverSide.take()
                    region = min(region.lowerBound, hunk.old.lowerBound)..<max(region.upperBound, hunk.old.upperBound)
                } else {
                    break
                }
            }
            if position < region.lowerBound { chunks.append(.unchanged(position..<region.lowerBound)) }
            let clientRange = clientSide.range(of: region, from: clientFirst)
            let serverRange = serverSide.range(of: region, from: serverFirst)
            switch (clientSide.index > clientFirst, serverSide.index > serverFirst) {
            case (true, true): chunks.append(.both(ancestor: region, client: clientRange, server: serverRange))
            case (true, false): chunks.append(.client(ancestor: region, client: clientRange))
            default: chunks.append(.server(ancestor: region, server: serverRange))
            }
            position = region.upperBound
        }
        if position < ancestorCount { chunks.append(.unchanged(position..<ancestorCount)) }
        return chunks
    }

    /// Whether a hunk's ancestor range overlaps a region: they share a
    /// token, or an insertion falls strictly inside the other, or both are
    /// insertions at one place.
    static func overlaps(_ hunk: Range<Int>, _ region: Range<Int>) -> Bool {
        if hunk.isEmpty && region.isEmpty { return hunk.lowerBound == region.lowerBound }
        if hunk.isEmpty { return region.lowerBound < hunk.lowerBound && hunk.lowerBound < region.upperBound }
        if region.isEmpty { return hunk.lowerBound < region.lowerBound && region.lowerBound < hunk.upperBound }
        return hunk.lowerBound < region.upperBound && region.lowerBound < hunk.upperBound
    }

    /// One side's hunks and how far the walk has taken them.
    private struct Side {
        let hunks: [DiffHunk]
        var index = 0

        var head: DiffHunk? { index < hunks.count ? hunks[index] : nil }

        /// Takes the head hunk.
        mutating func take() -> DiffHunk {
            index += 1
            return hunks[index - 1]
        }

        /// Whether this side's head starts the next region rather than
        /// `other`'s (the one that starts first, an insertion before a
        /// change at one place); `nil` when both sides are done.
        func startsBefore(_ other: Side) -> Bool? {
            switch (head, other.head) {
            case (nil, nil): return nil
            case (_?, nil): return true
            case (nil, _?): return false
            case (let mine?, let theirs?):
                if mine.old.lowerBound != theirs.old.lowerBound { return mine.old.lowerBound < theirs.old.lowerBound }
                return !(theirs.old.isEmpty && !mine.old.isEmpty)
            }
        }

        /// This side's tokens for the ancestor `region`, whose hunks are
        /// those from `first` up to the walk's position: outside hunks the
        /// side has the ancestor's tokens, shifted by the hunks before.
        func range(of region: Range<Int>, from first: Int) -> Range<Int> {
            if first < index {
                let start = hunks[first]
                let end = hunks[index - 1]
                let lower = start.new.lowerBound - (start.old.lowerBound - region.lowerBound)
                let upper = end.new.upperBound + (region.upperBound - end.old.upperBound)
                return lower..<upper
            }
            let shift = first > 0 ? hunks[first - 1].new.upperBound - hunks[first - 1].old.upperBound : 0
            return (region.lowerBound + shift)..<(region.upperBound + shift)
        }
    }
}
