import CloudCodable
import CloudProtocol

extension CloudService {
    /// How many containers the store holds: `cumulus serve` says it at
    /// start, and warns when there are none.
    public func containerCount() async throws -> Int {
        try await storage.read { try await $0.containerCount() }
    }

    /// The names of every container the store holds, in the order of their bytes.
    public func containerNames() async throws -> [String] {
        try await storage.read { try await $0.containerNames() }
    }
}
