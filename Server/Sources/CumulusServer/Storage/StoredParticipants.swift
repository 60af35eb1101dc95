import CloudCodable
import CloudProtocol
import Foundation

/// A share's participants as both stores keep them: one JSON array in a
/// BLOB (BYTEA) column. Bytes rather than text or `jsonb`, so that a name
/// holding U+0000 (which PostgreSQL text cannot hold) still comes back whole.
enum StoredParticipants {
    static func encode(_ participants: [ShareParticipant]) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(try encoder.encode(participants))
    }

    /// The participants in `bytes`; anything else is an impossible `shares` row.
    static func decode(_ bytes: some Sequence<UInt8>) throws(ImpossibleRow) -> [ShareParticipant] {
        do {
            return try JSONDecoder().decode([ShareParticipant].self, from: Data(bytes))
        } catch {
            throw ImpossibleRow(table: "shares", column: "participants", problem: "is not a list of participants")
        }
    }

    /// The users whose participant accepted, each once: the rows that
    /// `shares(acceptedBy:container:environment:)` finds the share by.
    static func acceptedUsers(_ participants: [ShareParticipant]) -> [String] {
        var seen = Set<ExactName>()
        return participants.compactMap { participant in
            guard participant.acceptanceStatus == .accepted, let user = participant.userRecordName,
                seen.insert(ExactName(user)).inserted
            else { return nil }
            return user
        }
    }
}
