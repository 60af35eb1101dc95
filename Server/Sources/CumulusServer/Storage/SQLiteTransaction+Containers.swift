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
}
