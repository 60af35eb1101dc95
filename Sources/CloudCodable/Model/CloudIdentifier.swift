import Foundation

/// Identifiers derived from what makes a model unique, so that two devices
/// that create the same real thing create the same record.
///
/// A tag named "work" created on a phone and on a laptop while both were
/// offline becomes two records when each takes a fresh `UUID`, and the app
/// shows two "work" tags. With an identifier derived from the name, both
/// creates name one record: the second to reach the server meets the first
/// and the model's ``CloudCodable/resolveConflict(client:server:ancestor:)``
/// merges them (the default keeps a field that only one side set).
///
/// ```swift
/// struct Tag: CloudCodable {
///     var name: String
///     var color: String?
///     var cloudMetadata: RecordMetadata?
///     var cloudIdentifier: String { CloudIdentifier.derived(for: Tag.self, from: [name]) }
/// }
/// ```
///
/// The identifier is a name-based UUID (RFC 9562, version 8) from the
/// SHA-256 of the model's record type and the components, in the upper-case
/// form the default ``CloudCodable/cloudIdentifier`` of a `UUID` takes: 36
/// ASCII characters, a valid record name everywhere. It is the same on
/// every platform, in every process and in every version of Cumulus (unlike
/// Swift's `hashValue`, which is seeded per process). Each component counts
/// with its length, so `["ab", "c"]` and `["a", "bc"]` differ, and the
/// record type is part of it, so two types never share a record name.
///
/// Things to weigh before deriving an identity:
///
/// - The identity can never change. Renaming a tag whose identifier comes
///   from its name makes another record; keep a display name in a field of
///   its own if it may change, and derive from something that does not.
/// - A thing deleted and created again gets the same record name. The
///   server keeps no tombstone that refuses it: the create makes the record
///   again, and every device sees it come back.
/// - Strings count as their exact UTF-8 bytes, with no Unicode
///   normalisation: a precomposed "é" and "e" with a combining accent give
///   different identifiers, as do "Work" and "work". Normalise components
///   the way your app compares them (`precomposedStringWithCanonicalMapping`,
///   lowercasing, trimming) before deriving.
/// - The record name does not show the components, but anyone who can list
///   the records and guess a value (an email address, a date) can check the
///   guess. Do not derive from secrets.
/// - Two different inputs share an identifier only if SHA-256 collides on
///   122 bits: never, in practice.
public enum CloudIdentifier {
    /// The record name of the model of type `Model` that `components`
    /// identify: for example `derived(for: Tag.self, from: [name])`, or a
    /// day as `[isoDate]`, or a list of one user as `[userID, listName]`.
    ///
    /// Write numbers and dates in one fixed form (a decimal integer, an ISO
    /// 8601 date in one time zone), so that every device writes the same text.
    public static func derived<Model: CloudCodable>(for type: Model.Type, from components: [String]) -> String {
        UUIDFormatting.string(derivedUUID(for: type, from: components))
    }

    /// The identifier of ``derived(for:from:)`` as a `UUID`, for a model
    /// whose `id` is a `UUID`: its default ``CloudCodable/cloudIdentifier``
    /// is then the same record name.
    public static func derivedUUID<Model: CloudCodable>(for type: Model.Type, from components: [String]) -> UUID {
        var hasher = SHA256()
        // Each item carries its length, so that no two lists of components
        // hash the same bytes; the first names this scheme and its version.
        for item in ["cumulus.derived-identifier.1", Model.cloudRecordType] + components {
            let length = UInt64(item.utf8.count)
            hasher.update((0..<8).reversed().map { UInt8(truncatingIfNeeded: length >> ($0 * 8)) })
            hasher.update(item.utf8)
        }
        var bytes = Array(hasher.finalize().prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8: custom, here SHA-256 of a name
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // the RFC's variant
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
