import CloudCodable
import CloudProtocol
import PostgresNIO

extension PostgresTransaction {
    func containerCount() async throws -> Int {
        guard let row = try await query("SELECT count(*) FROM containers").first else {
            throw CloudError(.internalError, reason: "counting the containers returned no row")
        }
        return Int(try row.decode(Int64.self))
    }

    func containerNames() async throws -> [String] {
        try await query("SELECT name FROM containers ORDER BY name COLLATE \"C\"").map { row in
            try read(row, table: "containers") { try $0.value("name") }
        }
    }
}
