import Foundation

/// A three-way merge of text that two devices edited from one version, so
/// that neither side's words are lost.
///
/// The default conflict resolution uses it for the fields a model names in
/// ``CloudCodable/cloudTextMergedFields``; a resolver of your own can call
/// it for any text.
///
/// ```swift
/// let merged = TextMerge.merge(
///     ancestor: "Milk\nEggs\nBread\n",
///     client: "Milk\nFree-range eggs\nBread\n",
///     server: "Milk\nEggs\nBread\nButter\n")
/// // "Milk\nFree-range eggs\nBread\nButter\n"
/// ```
///
/// How the merge goes:
///
/// - A side that left the text as the ancestor had it takes the other
///   side's text exactly; two sides with the same text give that text.
/// - Otherwise the text is compared line by line (a line keeps the line
///   feed that ends it), diff3-style: each side's changes against the
///   ancestor, from a shortest edit script (Myers' O(N·D) algorithm). A
///   region of lines only one side changed takes that side's lines. Changes
///   of neighbouring lines do not overlap, so both are taken; a line
///   inserted at the edge of the other side's change goes before it (at its
///   start) or after it (at its end).
/// - A region of lines both sides changed takes their text once if they made
///   the same change, and is otherwise merged again the same way by words:
///   runs of ASCII whitespace and runs of everything else, so the spacing
///   the sides wrote is kept.
/// - Where words still overlap, the rule is:
///   - the same change on both sides is taken once;
///   - a side that deleted the region gives way to the side that edited it:
///     the edit is kept;
///   - otherwise both are kept, the client's text first and then the
///     server's. Words at the start or end that both wrote the same are
///     kept once, and where the two texts would run together (neither has
///     whitespace where they meet) a space separates them, or a line feed
///     when the client's text starts a line of a text that has several.
///
/// Texts are compared as their exact UTF-8 bytes: a precomposed "é" and a
/// decomposed one are different text, as they are different field values
/// on the wire.
///
/// The merge takes O((N + M)·D) time for texts of N and M tokens that
/// differ by D, and memory in proportion to the texts: two 100 KB
/// documents with edits here and there merge in about a millisecond. Its
/// diffs get about 10⁸ token comparisons in all (a tenth of a second); a
/// diff that would go past them (two large texts rewritten through and
/// through) is not worked out: its text or region is treated as changed on
/// both sides, as above, so neither side's text is lost.
public enum TextMerge {
    /// Merges the changes that `client` and `server` made to `ancestor`;
    /// the rules are in the type's description.
    ///
    /// - Parameters:
    ///   - ancestor: the text both sides started from.
    ///   - client: this device's text.
    ///   - server: the other text: the server's, or a change queued earlier.
    /// - Returns: the text with both sides' changes.
    public static func merge(ancestor: String, client: String, server: String) -> String {
        var ancestor = ancestor
        var client = client
        var server = server
        let outcome = ancestor.withUTF8 { a in
            client.withUTF8 { c in
                server.withUTF8 { s -> Outcome in
                    if same(c, a) { return .server }
                    if same(s, a) || same(c, s) { return .client }
                    var merger = TextMerger(ancestor: a, client: c, server: s)
                    return .merged(merger.merge())
                }
            }
        }
        switch outcome {
        case .client: return client
        case .server: return server
        case .merged(let bytes): return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// A side's text as it is (without a copy), or a merged one.
    private enum Outcome {
        case client
        case server
        case merged([UInt8])
    }

    /// Whether two byte strings are the same bytes.
    static func same(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Bool {
        lhs.count == rhs.count && (lhs.isEmpty || memcmp(lhs.baseAddress!, rhs.baseAddress!, lhs.count) == 0)
    }
}

/// One merge of three texts, by lines and then by words, into `output`.
struct TextMerger {
    /// The comparisons the diffs of one merge may make in all (about 0.1 s
    /// in a release build): a diff costs about (N + M)·D of them.
    static let defaultComparisonBudget = 1 << 27

    /// The edit distance a diff may always reach, whatever is left of the
    /// budget, so that small regions are merged by words however many there are.
    static let minimumCost = 256

    let ancestor: UnsafeBufferPointer<UInt8>
    let client: UnsafeBufferPointer<UInt8>
    let server: UnsafeBufferPointer<UInt8>
    /// What is left of the comparison budget.
    private var comparisonBudget: Int
    private var output: [UInt8] = []

    init(
        ancestor: UnsafeBufferPointer<UInt8>, client: UnsafeBufferPointer<UInt8>, server: UnsafeBufferPointer<UInt8>,
        comparisonBudget: Int = defaultComparisonBudget
    ) {
        self.ancestor = ancestor
        self.client = client
        self.server = server
        self.comparisonBudget = comparisonBudget
        output.reserveCapacity(max(client.count, server.count) + 64)
    }

    /// The merged text's UTF-8.
    mutating func merge() -> [UInt8] {
        merge(0..<ancestor.count, 0..<client.count, 0..<server.count, by: .lines)
        return output
    }

    /// Merges the byte ranges of the three texts, cut into `unit`s; regions
    /// of lines that overlap are merged again by words.
    private mutating func merge(_ a: Range<Int>, _ c: Range<Int>, _ s: Range<Int>, by unit: TextTokens.Unit) {
        var interner = TokenInterner()
        let ancestorTokens = TextTokens(ancestor, a, by: unit, interner: &interner)
        let clientTokens = TextTokens(client, c, by: unit, interner: &interner)
        let serverTokens = TextTokens(server, s, by: unit, interner: &interner)
        guard let clientHunks = diff(ancestorTokens, clientTokens),
            let serverHunks = diff(ancestorTokens, serverTokens)
        else {
            keepBoth(clientTokens, 0..<clientTokens.count, serverTokens, 0..<serverTokens.count)
            return
        }
        let chunks = ThreeWayMerge.chunks(
            ancestorCount: ancestorTokens.count, client: clientHunks, server: serverHunks)
        for chunk in chunks {
            switch chunk {
            case .unchanged(let tokens): append(ancestorTokens, tokens)
            case .client(_, let tokens): append(clientTokens, tokens)
            case .server(_, let tokens): append(serverTokens, tokens)
            case .both(let ancestorRange, let clientRange, let serverRange):
                let clientBytes = clientTokens.byteRange(of: clientRange)
                let serverBytes = serverTokens.byteRange(of: serverRange)
                if TextMerge.same(
                    UnsafeBufferPointer(rebasing: client[clientBytes]),
                    UnsafeBufferPointer(rebasing: server[serverBytes]))
                {
                    append(clientTokens, clientRange)
                } else if unit == .lines {
                    merge(ancestorTokens.byteRange(of: ancestorRange), clientBytes, serverBytes, by: .words)
                } else {
                    keepBoth(clientTokens, clientRange, serverTokens, serverRange)
                }
            }
        }
    }

    /// The hunks from `old` to `new`, or `nil` when working them out would
    /// cost more than is left of the budget; takes what it cost from it.
    private mutating func diff(_ old: TextTokens, _ new: TextTokens) -> [DiffHunk]? {
        let size = max(1, old.count + new.count)
        let maximumCost = max(Self.minimumCost, comparisonBudget / size)
        let hunks = MyersDiff.hunks(old.ids, new.ids, maximumCost: maximumCost)
        let cost = hunks?.reduce(0) { $0 + $1.old.count + $1.new.count } ?? maximumCost
        comparisonBudget = max(0, comparisonBudget - size * cost)
        return hunks
    }

    /// The overlap rule: a deletion gives way to an edit; otherwise the
    /// client's tokens, then the server's, with what both start and end
    /// with written once, and a space or line feed where they would run together.
    private mutating func keepBoth(
        _ clientTokens: TextTokens, _ clientRange: Range<Int>, _ serverTokens: TextTokens, _ serverRange: Range<Int>
    ) {
        if clientRange.isEmpty { return append(serverTokens, serverRange) }
        if serverRange.isEmpty { return append(clientTokens, clientRange) }
        let shorter = min(clientRange.count, serverRange.count)
        var prefix = 0
        while prefix < shorter,
            clientTokens.ids[clientRange.lowerBound + prefix] == serverTokens.ids[serverRange.lowerBound + prefix]
        {
            prefix += 1
        }
        var suffix = 0
        while suffix < shorter - prefix,
            clientTokens.ids[clientRange.upperBound - 1 - suffix]
                == serverTokens.ids[serverRange.upperBound - 1 - suffix]
        {
            suffix += 1
        }
        let clientMiddle = (clientRange.lowerBound + prefix)..<(clientRange.upperBound - suffix)
        let serverMiddle = (serverRange.lowerBound + prefix)..<(serverRange.upperBound - suffix)
        append(clientTokens, clientRange.lowerBound..<clientMiddle.lowerBound)
        // At the start of the text, a line feed only if the text has lines.
        let startsLine = output.isEmpty ? isMultiline : output.last == UInt8(ascii: "\n")
        append(clientTokens, clientMiddle)
        let clientEnd = clientTokens.byteRange(of: clientMiddle)
        let serverStart = serverTokens.byteRange(of: serverMiddle)
        if !clientEnd.isEmpty, !serverStart.isEmpty, !TextTokens.isWhitespace(client[clientEnd.upperBound - 1]),
            !TextTokens.isWhitespace(server[serverStart.lowerBound])
        {
            output.append(startsLine ? UInt8(ascii: "\n") : UInt8(ascii: " "))
        }
        append(serverTokens, serverMiddle)
        append(clientTokens, clientMiddle.upperBound..<clientRange.upperBound)
    }

    /// Whether any of the three texts holds a line feed.
    private var isMultiline: Bool {
        [ancestor, client, server].contains { text in
            !text.isEmpty && memchr(text.baseAddress!, Int32(UInt8(ascii: "\n")), text.count) != nil
        }
    }

    private mutating func append(_ tokens: TextTokens, _ range: Range<Int>) {
        output.append(contentsOf: UnsafeBufferPointer(rebasing: tokens.bytes[tokens.byteRange(of: range)]))
    }
}
