import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("HTTP request bodies")
struct HTTPRequestBodyTests {
    static func create(_ name: String, type: String = "STRING") -> String {
        #"{"operationType":"create","record":{"recordType":"Note","recordName":"\#(name)","fields":{"title":{"value":"hi","type":"\#(type)"}}}}"#
    }

    static func modify(_ operations: [String]) -> String {
        #"{"operations":[\#(operations.joined(separator: ","))],"zoneID":{"zoneName":"_defaultZone"}}"#
    }

    static let names = ["n1", "b0", "b200"]

    /// Looks the records up and returns the names the server holds.
    static func storedNames(_ server: HTTPTestServer) async throws -> [String] {
        let body = #"{"records":[\#(names.map { #"{"recordName":"\#($0)"}"# }.joined(separator: ","))]}"#
        let answer = try await server.sendAsUser("records/lookup", body: body)
        #expect(answer.status == 200)
        let records = answer.json["records"] as? [[String: Any]] ?? []
        #expect(records.count == names.count)
        return records.filter { $0["serverErrorCode"] == nil }.compactMap { $0["recordName"] as? String }
    }

    @Test(
        "bad bodies get their error dictionary, change nothing, and the server keeps serving",
        arguments: TestStore.single)
    func badBodies(_ store: TestStore) async throws {
        let configuration = ServerConfiguration(port: 0, maximumBodySize: 256 * 1024, logger: quietLogger)
        try await HTTPTestServer.with(store: store, configuration: configuration) { server in
            let good = Self.modify([Self.create("n1")])
            let deep =
                #"{"operations":"# + String(repeating: "[", count: 100_000)
                + String(repeating: "]", count: 100_000) + "}"
            let tooLarge = #"{"operations":[],"padding":""# + String(repeating: "x", count: 300 * 1024) + #""}"#
            let bad: [(label: String, body: String, status: Int)] = [
                ("malformed JSON", #"{"operations": nope}"#, 400),
                ("truncated", String(good.prefix(good.count / 2)), 400),
                ("100,000 levels deep", deep, 400),
                ("larger than the limit", tooLarge, 413),
                (
                    "unknown operation type",
                    Self.modify([Self.create("n1").replacingOccurrences(of: "create", with: "frobnicate")]), 400
                ),
                ("unknown field type", Self.modify([Self.create("n1", type: "SPACESHIP")]), 400),
                ("201 operations", Self.modify((0...200).map { Self.create("b\($0)") }), 400),
                ("not an object", "[]", 400),
                ("empty", "", 400),
            ]
            for (label, body, status) in bad {
                let answer = try await server.sendAsUser("records/modify", body: body)
                #expect(answer.isError(.badRequest, status: status), "\(label): \(answer.status) \(answer.json)")
                if status == 413 {
                    #expect(answer.reason?.contains("\(256 * 1024)") == true, "\(label): \(answer.reason ?? "")")
                }
                #expect(try await Self.storedNames(server).isEmpty, "\(label) changed data")
            }
            let created = try await server.sendAsUser("records/modify", body: good)
            #expect(created.status == 200)
            #expect(try await Self.storedNames(server) == ["n1"])
        }
    }
}
