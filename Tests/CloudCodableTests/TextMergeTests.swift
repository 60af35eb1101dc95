import Foundation
import Testing

@testable import CloudCodable

@Suite("Text merge")
struct TextMergeTests {
    @Test("edits of different lines are both kept")
    func differentLines() {
        let merged = TextMerge.merge(
            ancestor: "Milk\nEggs\nBread\n", client: "Milk\nFree-range eggs\nBread\n",
            server: "Milk\nEggs\nBread\nButter\n")
        #expect(merged == "Milk\nFree-range eggs\nBread\nButter\n")
    }

    @Test("edits of neighbouring lines are both kept")
    func neighbouringLines() {
        let merged = TextMerge.merge(ancestor: "a\nb\nc\n", client: "a\nB\nc\n", server: "a\nb\nC\n")
        #expect(merged == "a\nB\nC\n")
        let inserted = TextMerge.merge(ancestor: "a\nb\n", client: "a\nnew\nb\n", server: "a\nB\n")
        #expect(inserted == "a\nnew\nB\n")
        let after = TextMerge.merge(ancestor: "a\nb\n", client: "A\nb\n", server: "a\nnew\nb\n")
        #expect(after == "A\nnew\nb\n")
    }

    @Test("edits of different words of one line are both kept, with their spacing")
    func differentWords() {
        let merged = TextMerge.merge(
            ancestor: "Sunset over the bay", client: "Sunset  over the old bay", server: "Sunrise over the bay")
        #expect(merged == "Sunrise  over the old bay")
    }

    @Test("the same change on both sides is taken once")
    func sameChange() {
        let merged = TextMerge.merge(
            ancestor: "teh cat\nsat\n", client: "the cat\nsat down\n", server: "the cat\nsat\n")
        #expect(merged == "the cat\nsat down\n")
        #expect(TextMerge.merge(ancestor: "a b c", client: "a x c d", server: "a x c e") == "a x c d e")
    }

    @Test("a deletion on one side gives way to an edit on the other")
    func deletionAgainstEdit() {
        #expect(
            TextMerge.merge(
                ancestor: "keep\ndrop me\nkeep\n", client: "keep\nkeep\n", server: "keep\ndrop me now\nkeep\n")
                == "keep\ndrop me now\nkeep\n")
        #expect(TextMerge.merge(ancestor: "one two three", client: "one 2 three", server: "one three") == "one 2 three")
    }

    @Test("different changes of one place keep both, the client's first, apart where they would run together")
    func overlapKeepsBoth() {
        #expect(
            TextMerge.merge(ancestor: "The quick fox", client: "The fast fox", server: "The slow fox")
                == "The fast slow fox")
        #expect(
            TextMerge.merge(ancestor: "The fox", client: "The brown fox", server: "The red fox")
                == "The brown red fox")
        // A line each side added after a last line without a line feed.
        #expect(TextMerge.merge(ancestor: "a\nb", client: "a\nb\nc", server: "a\nb\nd") == "a\nb\nc\nd")
        #expect(TextMerge.merge(ancestor: "a\nb\n", client: "a\nc\n", server: "a\nd\n") == "a\nc\nd\n")
    }

    @Test("an unchanged side gives the other side's text exactly")
    func unchangedSide() {
        let decomposed = "Cafe\u{301}"
        let precomposed = "Caf\u{E9}"
        #expect(decomposed == precomposed)  // equal as Swift strings, different bytes
        let merged = TextMerge.merge(ancestor: decomposed, client: decomposed, server: precomposed)
        #expect(Array(merged.utf8) == Array(precomposed.utf8))
        let back = TextMerge.merge(ancestor: precomposed, client: decomposed, server: precomposed)
        #expect(Array(back.utf8) == Array(decomposed.utf8))
    }

    @Test("texts are compared as bytes: canonically equivalent lines are different lines")
    func exactBytes() {
        let merged = TextMerge.merge(
            ancestor: "Caf\u{E9}\nmenu\n", client: "Cafe\u{301}\nmenu\n", server: "Caf\u{E9}\nmenu!\n")
        #expect(Array(merged.utf8) == Array("Cafe\u{301}\nmenu!\n".utf8))
    }

    @Test("a diff over its budget treats the text as changed on both sides and keeps both")
    func overBudget() {
        let ancestor = (0..<300).map { "a\($0)\n" }.joined()
        let client = (0..<300).map { "c\($0)\n" }.joined()
        let server = (0..<300).map { "s\($0)\n" }.joined()
        var texts = (ancestor, client, server)
        let merged = texts.0.withUTF8 { a in
            texts.1.withUTF8 { c in
                texts.2.withUTF8 { s in
                    var merger = TextMerger(ancestor: a, client: c, server: s, comparisonBudget: 1_000)
                    return merger.merge()
                }
            }
        }
        #expect(merged == Array((client + server).utf8))
        // Within the budget the same texts merge by words: a rewrite of each line on each side.
        let full = TextMerge.merge(ancestor: ancestor, client: client, server: server)
        #expect(full.hasPrefix("c0\ns0\nc1\ns1\n"))
    }

    @Test("the comparison budget is shared by the whole merge: a region past what is left keeps both texts")
    func budgetIsShared() {
        func line(_ prefix: String) -> String { (0..<200).map { "\(prefix)\($0)" }.joined(separator: " ") + "\n" }
        // Both sides rewrite the first and the last line; each word diff of
        // a line costs about 800 tokens × 400 edits.
        let ancestor = line("a") + "kept\n" + line("b")
        let client = line("c") + "kept\n" + line("d")
        let server = line("s") + "kept\n" + line("t")
        var texts = (ancestor, client, server)
        let merged = texts.0.withUTF8 { a in
            texts.1.withUTF8 { c in
                texts.2.withUTF8 { s in
                    var merger = TextMerger(ancestor: a, client: c, server: s, comparisonBudget: 700_000)
                    return String(decoding: merger.merge(), as: UTF8.self)
                }
            }
        }
        let lines = merged.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 6)
        #expect(lines[0].hasPrefix("c0"))
        #expect(lines[1].hasPrefix("s0 c1 s1 c2 s2 "))  // merged word by word
        #expect(lines[2] == "kept")
        #expect(lines[3] + "\n" == line("d"))  // past the budget: both lines whole
        #expect(merged.hasSuffix(line("d") + line("t")))
    }

    @Test("two 100 KB documents with edits here and there merge with every edit")
    func largeDocument() {
        let lines = (0..<2_500).map { "Line \($0) of a long document, with some words.\n" }
        var client = lines
        var server = lines
        for index in stride(from: 10, to: lines.count, by: 97) { client[index] = "Client's line \(index).\n" }
        for index in stride(from: 51, to: lines.count, by: 89) { server[index] = "Server's line \(index).\n" }
        server.insert("A line the server added.\n", at: 1_000)
        let ancestor = lines.joined()
        #expect(ancestor.utf8.count > 100_000)
        var expected = lines
        for index in stride(from: 10, to: lines.count, by: 97) { expected[index] = client[index] }
        for index in stride(from: 51, to: lines.count, by: 89) {
            expected[index] = server[index > 1_000 ? index + 1 : index]
        }
        expected.insert("A line the server added.\n", at: 1_000)
        #expect(
            TextMerge.merge(ancestor: ancestor, client: client.joined(), server: server.joined()) == expected.joined())
    }
}

@Suite("Text merge properties")
struct TextMergePropertyTests {
    @Test("a side left as the ancestor gives the other side; equal sides give their text")
    func identities() {
        var random = TextRandom(seed: 1)
        for _ in 0..<300 {
            let ancestor = random.smallText()
            let edited = random.smallText()
            let bytes = Array(edited.utf8)
            #expect(Array(TextMerge.merge(ancestor: ancestor, client: ancestor, server: edited).utf8) == bytes)
            #expect(Array(TextMerge.merge(ancestor: ancestor, client: edited, server: ancestor).utf8) == bytes)
            #expect(Array(TextMerge.merge(ancestor: ancestor, client: edited, server: edited).utf8) == bytes)
        }
    }

    @Test("the merge is deterministic: the same texts give the same result, in this process and in any other")
    func deterministic() {
        var random = TextRandom(seed: 2)
        var digest = SHA256()
        for _ in 0..<300 {
            let (ancestor, client, server) = (random.smallText(), random.smallText(), random.smallText())
            let merged = TextMerge.merge(ancestor: ancestor, client: client, server: server)
            #expect(TextMerge.merge(ancestor: ancestor, client: client, server: server) == merged)
            digest.update(Array(merged.utf8) + [0])
        }
        // Fixed by the rules: a change of the results is a change of behaviour.
        #expect(hex(digest.finalize()) == "df5250f232515feec50decc1470eada521f6ae9f9f64950872e95673f66d5964")
    }

    @Test("line edits that do not overlap all survive, in place")
    func separateLineEdits() {
        var random = TextRandom(seed: 3)
        for _ in 0..<300 {
            let count = random.below(30) + 1
            let ancestor = (0..<count).map { "line \($0)\n" }
            // Who changes each line, and who inserts before each line (and at the end).
            let changes = (0..<count).map { _ in random.owner() }
            var inserts = (0...count).map { _ in random.owner() }
            for point in 0...count where inserts[point] != nil {
                // An insertion strictly inside the other side's change overlaps it.
                let other = inserts[point] == .client ? TextRandom.Owner.server : .client
                if point > 0, point < count, changes[point - 1] == other, changes[point] == other {
                    inserts[point] = nil
                }
            }
            var client: [String] = []
            var server: [String] = []
            var expected: [String] = []
            for point in 0...count {
                if let owner = inserts[point] {
                    let line = "\(owner) inserted at \(point)\n"
                    if owner == .client { client.append(line) } else { server.append(line) }
                    expected.append(line)
                }
                guard point < count else { break }
                let deleted = random.below(3) == 0
                let line = changes[point].map { deleted ? "" : "\($0) changed \(point)\n" } ?? ancestor[point]
                client.append(changes[point] == .server ? ancestor[point] : line)
                server.append(changes[point] == .client ? ancestor[point] : line)
                expected.append(line)
            }
            let merged = TextMerge.merge(
                ancestor: ancestor.joined(), client: client.joined(), server: server.joined())
            #expect(merged == expected.joined(), "client \(client), server \(server)")
        }
    }

    @Test("word edits of different words of one line all survive")
    func separateWordEdits() {
        var random = TextRandom(seed: 4)
        for _ in 0..<300 {
            let words = (0..<(random.below(20) + 1)).map { "w\($0)" }
            var client = words
            var server = words
            var expected = words
            for index in words.indices {
                switch random.owner() {
                case .client?:
                    client[index] = "c\(index)"
                    expected[index] = client[index]
                case .server?:
                    server[index] = "s\(index)"
                    expected[index] = server[index]
                case nil: break
                }
            }
            let merged = TextMerge.merge(
                ancestor: words.joined(separator: " "), client: client.joined(separator: " "),
                server: server.joined(separator: " "))
            #expect(merged == expected.joined(separator: " "))
        }
    }

    @Test("every word that neither side deleted or replaced is in the result, in order")
    func keptWordsSurvive() {
        var random = TextRandom(seed: 5)
        for _ in 0..<300 {
            let words = (0..<(random.below(40) + 1)).map { "a\($0)" }
            let spacing = words.map { _ in random.below(4) == 0 ? "\n" : " " }
            let ancestor = zip(words, spacing).map { $0 + $1 }.joined()
            let (client, clientKept) = random.edit(words, spacing, side: "c")
            let (server, serverKept) = random.edit(words, spacing, side: "s")
            let merged = TextMerge.merge(ancestor: ancestor, client: client, server: server)
            let kept = words.filter { clientKept.contains($0) && serverKept.contains($0) }
            let result = merged.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
            #expect(
                isSubsequence(kept, of: result), "ancestor \(ancestor) client \(client) server \(server): \(merged)")
            // No words run together: each is one the ancestor or a side wrote.
            for word in result {
                #expect("acs".contains(word.prefix(1)) && word.count > 1 && word.dropFirst().allSatisfy(\.isNumber))
            }
        }
    }

    private func isSubsequence(_ items: [String], of sequence: [String]) -> Bool {
        var iterator = sequence.makeIterator()
        return items.allSatisfy { item in
            while let next = iterator.next() { if next == item { return true } }
            return false
        }
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

@Suite("Myers diff")
struct MyersDiffTests {
    @Test("the hunks turn one sequence into the other with a shortest edit script, and respect the cost bound")
    func shortestScript() throws {
        var random = TextRandom(seed: 6)
        for _ in 0..<500 {
            let old = (0..<random.below(25)).map { _ in random.below(4) }
            let new = (0..<random.below(25)).map { _ in random.below(4) }
            let hunks = try #require(MyersDiff.hunks(old, new))
            var rebuilt: [Int] = []
            var position = 0
            for (index, hunk) in hunks.enumerated() {
                #expect(!hunk.old.isEmpty || !hunk.new.isEmpty)
                if index > 0 { #expect(hunk.old.lowerBound > hunks[index - 1].old.upperBound) }
                rebuilt += old[position..<hunk.old.lowerBound] + new[hunk.new]
                position = hunk.old.upperBound
            }
            rebuilt += old[position...]
            #expect(rebuilt == new, "\(old) → \(new): \(hunks)")
            let cost = hunks.reduce(0) { $0 + $1.old.count + $1.new.count }
            #expect(cost == old.count + new.count - 2 * longestCommonSubsequence(old, new))
            #expect(MyersDiff.hunks(old, new, maximumCost: cost) != nil)
            if cost > 0 { #expect(MyersDiff.hunks(old, new, maximumCost: cost - 1) == nil) }
        }
    }

    /// The textbook quadratic dynamic programme, to check the diff against.
    private func longestCommonSubsequence(_ a: [Int], _ b: [Int]) -> Int {
        var previous = [Int](repeating: 0, count: b.count + 1)
        for x in a {
            var current = [Int](repeating: 0, count: b.count + 1)
            for (j, y) in b.enumerated() {
                current[j + 1] = x == y ? previous[j] + 1 : max(previous[j + 1], current[j])
            }
            previous = current
        }
        return previous[b.count]
    }
}

/// Seeded draws for the merge tests, taken from the generator's bits
/// directly so that the cases are the same with any standard library.
struct TextRandom {
    enum Owner: CustomStringConvertible {
        case client, server
        var description: String { self == .client ? "client" : "server" }
    }

    private var generator: WireRandom

    init(seed: UInt64) { generator = WireRandom(seed: seed) }

    mutating func below(_ bound: Int) -> Int { Int(generator.next() % UInt64(bound)) }

    /// Nobody (three times in five), the client or the server.
    mutating func owner() -> Owner? {
        switch below(5) {
        case 0: return .client
        case 1: return .server
        default: return nil
        }
    }

    /// A short text of few distinct words, lines and spaces: many repeats.
    mutating func smallText() -> String {
        let pieces = ["a", "b", "c", " ", " ", "\n", "\u{E9}", "e\u{301}", "ab"]
        return (0..<below(16)).map { _ in pieces[below(pieces.count)] }.joined()
    }

    /// `words` (each followed by its spacing), edited by one side: some
    /// deleted or replaced, new words inserted. Returns the text and the
    /// ancestor's words the side kept.
    mutating func edit(_ words: [String], _ spacing: [String], side: String) -> (String, Set<String>) {
        var text = ""
        var kept: Set<String> = []
        for (index, word) in words.enumerated() {
            switch below(10) {
            case 0: break
            case 1: text += "\(side)\(index)" + spacing[index]
            case 2:
                text += word + spacing[index] + "\(side)\(index)" + (below(2) == 0 ? " " : "\n")
                kept.insert(word)
            default:
                text += word + spacing[index]
                kept.insert(word)
            }
        }
        return (text, kept)
    }
}
