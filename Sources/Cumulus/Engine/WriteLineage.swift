import CloudCodable
import CloudProtocol

/// The identifiers of the writes a record's version grew from, carried in
/// the record itself so that an engine recognises its own write on the
/// server even after other devices have changed the record since.
///
/// Every save the engine queues gets a fresh identifier, put in front of the
/// identifiers of the version it was based on, in the `STRING_LIST` field
/// ``field``. A version whose list starts with the identifier of a write in
/// doubt is that write; one whose list holds it further on grew from it.
/// Models never see the field: decoding ignores fields a model does not
/// declare, and the engine adds it only to what it sends.
enum WriteLineage {
    /// The field's name; other clients of the same container see it as an
    /// ordinary field of the record.
    static let field = "cumulusWrites"
    /// How many identifiers a version carries: enough to see through the
    /// edits other devices make before a lost answer is settled.
    static let length = 8

    /// The identifiers in `record`, newest first.
    static func identifiers(of record: Record) -> [String] {
        if case .stringList(let identifiers)? = record[field] { return identifiers }
        return []
    }

    /// A write identifier of 64 random bits, from two draws of `random`.
    static func newIdentifier(_ random: () -> Double) -> String {
        let high = UInt64(min(max(random(), 0), 0x1.fffffffffffffp-1) * 4_294_967_296)
        let low = UInt64(min(max(random(), 0), 0x1.fffffffffffffp-1) * 4_294_967_296)
        return String(high << 32 | low, radix: 16)
    }

    /// `record` stamped with a new write identifier on top of `base`'s.
    static func stamped(_ record: Record, identifier: String, basedOn base: [String]) -> Record {
        var stamped = record
        stamped[field] = .stringList([identifier] + base.prefix(length - 1))
        return stamped
    }

    /// Whether two records hold the same model content, whatever their lineage.
    static func sameContent(_ sent: Record, _ stored: Record) -> Bool {
        guard sent.recordType == stored.recordType else { return false }
        var left = sent.fields
        var right = stored.fields
        left[field] = nil
        right[field] = nil
        return left == right
    }
}
