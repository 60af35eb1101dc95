import CloudProtocol
import Foundation
import Logging
import SQLiteNIO
import Testing

@testable import CumulusServer

/// The SQLite store's own connection: a transaction runs on its thread,
/// kept statements follow the schema, a failed statement rolls the
/// transaction back, and a closed store refuses work.
@Suite("SQLite store's connection")
struct SQLiteHandleTests {
    static func statements(_ transaction: any StorageTransaction) throws -> SQLiteTransaction {
        try #require(transaction as? SQLiteTransaction)
    }

    static func withStorage(_ body: (SQLiteStorage, String) async throws -> Void) async throws {
        try await SQLiteSchemaTests.withFile { path in
            let storage = try await SQLiteStorage(path: path, logger: Logger(label: "test"))
            do {
                try await body(storage, path)
                try await storage.close()
            } catch {
                try? await storage.close()
                throw error
            }
        }
    }

    @Test("a transaction's body and statements run on the store's own thread")
    func runsOnItsThread() async throws {
        try await Self.withStorage { storage, _ in
            let onThread = try await storage.read { transaction in
                let statements = try Self.statements(transaction)
                _ = try await statements.query("SELECT 1 AS one")
                return statements.connection.thread.isCurrent
            }
            #expect(onThread)
        }
    }

    @Test("a kept statement reads the columns a later schema change gave its table")
    func keptStatementFollowsSchema() async throws {
        try await Self.withStorage { storage, path in
            let select = "SELECT * FROM probe"
            let before = try await storage.write { transaction in
                let statements = try Self.statements(transaction)
                try await statements.query("CREATE TABLE probe (a INTEGER NOT NULL)")
                try await statements.query("INSERT INTO probe (a) VALUES (1)")
                return try await statements.query(select).first?.columns.names ?? []
            }
            #expect(before == ["a"])
            // Another connection, as the `cumulus` command's, changes the schema.
            let other = try await SQLiteConnection.open(storage: .file(path: path))
            _ = try await other.query("ALTER TABLE probe ADD COLUMN b TEXT NOT NULL DEFAULT 'x'")
            try await other.close()
            let after = try await storage.read { transaction in
                try await Self.statements(transaction).query(select).first
            }
            #expect(after?.columns.names == ["a", "b"])
            #expect(after?.column("b") == .text("x"))
        }
    }

    @Test("a failed statement rolls its transaction back, and the next one runs")
    func failedStatementRollsBack() async throws {
        try await Self.withStorage { storage, _ in
            _ = try await storage.write { transaction in
                try await Self.statements(transaction).query("CREATE TABLE probe (a INTEGER PRIMARY KEY)")
            }
            await #expect(throws: SQLiteFailure.self) {
                try await storage.write { transaction in
                    let statements = try Self.statements(transaction)
                    try await statements.query("INSERT INTO probe (a) VALUES (1)")
                    try await statements.query("INSERT INTO probe (a) VALUES (1)")
                }
            }
            let count = try await storage.read { transaction in
                try await Self.statements(transaction).query("SELECT count(*) AS n FROM probe").first?.column("n")
            }
            #expect(count == .integer(0))
            _ = try await storage.write { transaction in
                try await Self.statements(transaction).query("INSERT INTO probe (a) VALUES (1)")
            }
            let written = try await storage.read { transaction in
                try await Self.statements(transaction).query("SELECT count(*) AS n FROM probe").first?.column("n")
            }
            #expect(written == .integer(1))
        }
    }

    @Test("more statements than the cache keeps all run, with their own binds")
    func manyStatements() async throws {
        try await Self.withStorage { storage, _ in
            let sums = try await storage.read { transaction -> [Int] in
                let statements = try Self.statements(transaction)
                var sums: [Int] = []
                for count in 1...(SQLiteHandle.cacheLimit + 20) {
                    let sql = "SELECT " + Array(repeating: "?", count: count).joined(separator: " + ") + " AS total"
                    let rows = try await statements.query(sql, Array(repeating: .integer(1), count: count))
                    guard case .integer(let total) = rows.first?.column("total") else { return [] }
                    sums.append(Int(total))
                }
                return sums
            }
            #expect(sums == Array(1...(SQLiteHandle.cacheLimit + 20)))
        }
    }

    @Test("names come back byte for byte, a U+0000 and an empty name included")
    func exactText() async throws {
        try await Self.withStorage { storage, _ in
            let names = ["a\u{0}b", "", "é"]
            let read = try await storage.read { transaction in
                let statements = try Self.statements(transaction)
                var read: [String] = []
                for name in names {
                    let rows = try await statements.query(
                        "SELECT \(SQLiteColumns.exact("v")) FROM (SELECT ? AS v)", [.text(name)])
                    read.append(try SQLiteColumns(try #require(rows.first), table: "probe").text("v"))
                }
                return read
            }
            #expect(read.map { Array($0.utf8) } == names.map { Array($0.utf8) })
        }
    }

    @Test("an idle store closes, closes again, and then refuses transactions")
    func closeWhileIdle() async throws {
        try await SQLiteSchemaTests.withFile { path in
            let storage = try await SQLiteStorage(path: path, logger: Logger(label: "test"))
            _ = try await storage.write { transaction in
                try await Self.statements(transaction).query("CREATE TABLE probe (a INTEGER)")
            }
            try await storage.close()
            try await storage.close()
            await #expect(throws: CloudError.self) {
                try await storage.read { _ in }
            }
            // The file is whole and free: another store opens it.
            let again = try await SQLiteStorage(path: path, logger: Logger(label: "test"))
            let tables = try await again.read { transaction in
                try await Self.statements(transaction).query("SELECT name FROM sqlite_master WHERE name = 'probe'")
                    .count
            }
            #expect(tables == 1)
            try await again.close()
        }
    }
}
