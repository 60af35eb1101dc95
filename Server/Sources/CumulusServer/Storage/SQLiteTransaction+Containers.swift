import CloudCodable
import CloudProtocol
import SQLiteNIO

extension SQLiteTransaction {
    func containerCount() async throws -> Int {
        let rows = try await query("SELECT COUNT(*) AS count FROM containers")
        guard case .integer(let count) = rows.first?.column("count") else {
            throw CloudError(.internalError, reason: "counting the containers returned no number")
        }
        return Int(count)
    }

    func containerNames() async throws -> [String] {
        // BINARY collation: the order of the names' bytes.
        try await query("SELECT \(SQLiteColumns.exact("name")) FROM containers ORDER BY name").map { row in
            try read(row, table: "containers") { try $0.text("name") }
        }
    }
}
