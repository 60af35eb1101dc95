import Benchmark
import Cumulus
import Foundation

/// The merge of a 100 KB document that two devices edited at scattered
/// places (issue #36: "100 KB documents merge in milliseconds"), with two
/// floors in the same run: comparing the document with an equal copy, and
/// cutting the three texts into lines, the least a line merge must do.
func registerTextMergeBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .throughput], timeUnits: .microseconds, warmupIterations: 1,
        scalingFactor: .one, maxDuration: .seconds(5), maxIterations: 1_000)
    Benchmark("TextMerge.100KB", configuration: configuration) { benchmark, documents in
        for _ in benchmark.scaledIterations {
            blackHole(
                TextMerge.merge(ancestor: documents.ancestor, client: documents.client, server: documents.server))
        }
    } setup: {
        try TextMergeDocuments()
    }
    Benchmark("TextMerge.100KB baseline String ==", configuration: configuration) { benchmark, documents in
        for _ in benchmark.scaledIterations { blackHole(documents.ancestor == documents.ancestorCopy) }
    } setup: {
        try TextMergeDocuments()
    }
    Benchmark("TextMerge.100KB baseline lines of the three texts", configuration: configuration) {
        benchmark, documents in
        for _ in benchmark.scaledIterations {
            var lines = 0
            for text in [documents.ancestor, documents.client, documents.server] {
                lines += text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
            }
            blackHole(lines)
        }
    } setup: {
        try TextMergeDocuments()
    }
}

/// A document of about 100 KB (1,650 lines), a client's edit of a word in
/// every 113th line, a server's edit in every 127th and three inserted
/// lines, and one line whose different words both changed.
struct TextMergeDocuments: Sendable {
    let ancestor: String
    /// The ancestor again, in storage of its own, for the `==` floor.
    let ancestorCopy: String
    let client: String
    let server: String

    init() throws {
        let lines = (0..<1_650).map { "Line \($0): the quick brown fox jumps over the lazy dog again.\n" }
        var client = lines
        var server = lines
        for index in stride(from: 7, to: lines.count, by: 113) {
            client[index] = client[index].replacingOccurrences(of: "quick", with: "swift")
        }
        for index in stride(from: 60, to: lines.count, by: 127) {
            server[index] = server[index].replacingOccurrences(of: "lazy", with: "sleepy")
        }
        client[1_200] = client[1_200].replacingOccurrences(of: "brown", with: "red")
        server[1_200] = server[1_200].replacingOccurrences(of: "dog", with: "cat")
        for index in stride(from: 300, to: lines.count, by: 600) {
            server.insert("An inserted line \(index).\n", at: index)
        }
        ancestor = lines.joined()
        ancestorCopy = String(decoding: Array(ancestor.utf8), as: UTF8.self)
        self.client = client.joined()
        self.server = server.joined()
        // A merge that lost an edit would measure the wrong work.
        let merged = TextMerge.merge(ancestor: ancestor, client: self.client, server: self.server)
        let expected = (swift: 15, sleepy: 13, inserted: 3)
        let found = (
            swift: merged.components(separatedBy: "swift").count - 1,
            sleepy: merged.components(separatedBy: "sleepy").count - 1,
            inserted: merged.components(separatedBy: "An inserted line").count - 1
        )
        guard found == expected, merged.contains("the quick red fox jumps over the lazy cat") else {
            throw TextMergeBenchmarkFailure("the merge lost an edit: found \(found)")
        }
    }
}

/// A text merge workload that did not do what it measures.
struct TextMergeBenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
