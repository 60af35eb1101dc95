import CloudCodable
import CloudProtocol
import Foundation

/// Seals and opens the encrypted fields of one record type.
///
/// On the wire an encrypted value is a `BYTES` field holding an envelope:
/// `CUE1`, the key identifier's length (one byte) and its UTF-8, then what
/// the cipher made of the value's wire JSON (so a field of any type but an
/// asset or a reference can be encrypted). The cipher authenticates the
/// record type, the record name and the field name with it, so that the
/// server cannot move a value to another record or field unnoticed.
struct EncryptedFields: Sendable {
    let recordType: String
    /// The encrypted fields' names, compared as bytes.
    let names: [String]
    let encryption: FieldEncryption

    static let magic = Array("CUE1".utf8)

    init(recordType: String, names: Set<String>, encryption: FieldEncryption) {
        self.recordType = recordType
        self.names = names.sorted()
        self.encryption = encryption
    }

    func isEncrypted(_ field: String) -> Bool {
        names.contains { $0.utf8.elementsEqual(field.utf8) }
    }

    func applies(to record: Record) -> Bool {
        record.recordType.utf8.elementsEqual(recordType.utf8)
    }

    /// Whether `value` is an envelope: a value sealed on some device.
    static func isSealed(_ value: FieldValue) -> Bool {
        guard case .bytes(let data) = value else { return false }
        return data.starts(with: magic)
    }

    // MARK: Sealing

    /// Throws when an encrypted field of `record` holds what cannot be
    /// encrypted: an asset or a reference, which the server reads.
    func checkSealable(_ record: Record) throws {
        guard applies(to: record) else { return }
        for (field, value) in record.fields where isEncrypted(field) {
            switch value {
            case .asset, .assetList, .reference, .referenceList:
                throw FieldEncryptionError(
                    .cannotSeal, field: field,
                    "an asset or a reference is read by the server (its bytes, its target) and cannot be encrypted")
            default:
                continue
            }
        }
    }

    /// `record` with its encrypted fields sealed with the zone's current
    /// key. A value still sealed (one this device could not open) goes
    /// back as it came.
    func seal(_ record: Record) throws -> Record {
        guard applies(to: record) else { return record }
        var sealed = record
        var key: FieldKey?
        try checkSealable(record)
        for (field, value) in record.fields where isEncrypted(field) && !Self.isSealed(value) {
            let current = try key ?? encryption.keys.currentKey(for: record.zoneID)
            key = current
            _ = sealed.fields.updateValue(try seal(value, field: field, of: record, with: current), forKey: field)
        }
        return sealed
    }

    private func seal(_ value: FieldValue, field: String, of record: Record, with key: FieldKey) throws
        -> FieldValue
    {
        let identifier = Array(key.identifier.utf8)
        guard key.bytes.count == 32, !identifier.isEmpty, identifier.count <= 255 else {
            throw FieldEncryptionError(
                .cannotSeal, field: field,
                "key '\(key.identifier)' must have 32 bytes and an identifier of 1 to 255 bytes")
        }
        let plaintext = try WireFormat.encode(
            Record(recordType: "", recordName: "", fields: RecordFields([field: value])))
        let box = try encryption.cipher.seal(
            plaintext, key: key.bytes, authenticating: Self.associatedData(record, field))
        var bytes = Self.magic
        bytes.append(UInt8(identifier.count))
        bytes += identifier
        bytes += box
        return .bytes(Data(bytes))
    }

    // MARK: Opening

    /// `record` with every encrypted field this device can open opened; the
    /// others stay sealed, each with why.
    func open(_ record: Record) -> (record: Record, failures: [FieldEncryptionError]) {
        guard applies(to: record) else { return (record, []) }
        var opened = record
        var failures: [FieldEncryptionError] = []
        for (field, value) in record.fields where isEncrypted(field) && Self.isSealed(value) {
            guard case .bytes(let data) = value else { continue }
            do {
                _ = opened.fields.updateValue(try open(Array(data), field: field, of: record), forKey: field)
            } catch let error as FieldEncryptionError {
                failures.append(error)
            } catch {
                failures.append(FieldEncryptionError(.cannotOpen, field: field, "\(error)"))
            }
        }
        return (opened, failures)
    }

    /// `record` opened, or the first reason one of its fields stays sealed.
    func openedOrThrow(_ record: Record) throws -> Record {
        let (opened, failures) = open(record)
        if let failure = failures.first { throw failure }
        return opened
    }

    private func open(_ bytes: [UInt8], field: String, of record: Record) throws -> FieldValue {
        let start = Self.magic.count
        guard bytes.count > start, bytes.count > start + 1 + Int(bytes[start]) else {
            throw FieldEncryptionError(.cannotOpen, field: field, "the sealed value is cut short")
        }
        let length = Int(bytes[start])
        guard let identifier = String(validating: bytes[(start + 1)..<(start + 1 + length)], as: UTF8.self) else {
            throw FieldEncryptionError(.cannotOpen, field: field, "the sealed value's key identifier is not UTF-8")
        }
        guard let key = try encryption.keys.key(identifier: identifier, for: record.zoneID) else {
            throw FieldEncryptionError(
                .keyUnavailable, field: field,
                "record '\(record.recordName)' was encrypted with key '\(identifier)', which this device does not have")
        }
        let plaintext: [UInt8]
        do {
            plaintext = try encryption.cipher.open(
                Array(bytes[(start + 1 + length)...]), key: key.bytes,
                authenticating: Self.associatedData(record, field))
        } catch {
            throw FieldEncryptionError(
                .cannotOpen, field: field,
                "record '\(record.recordName)' does not open with key '\(identifier)': a wrong key under that "
                    + "identifier, or a value changed since it was sealed")
        }
        guard let value = try WireFormat.decodeRecord(from: plaintext).fields[field] else {
            throw FieldEncryptionError(.cannotOpen, field: field, "the opened value names another field")
        }
        return value
    }

    private static func associatedData(_ record: Record, _ field: String) -> [UInt8] {
        Array(record.recordType.utf8) + [0] + Array(record.recordName.utf8) + [0] + Array(field.utf8)
    }

    // MARK: Queries

    /// Throws when `query` filters or sorts by an encrypted field: the server
    /// holds only ciphertext, so it cannot compare one.
    func check(_ query: RecordQuery) throws {
        guard query.recordType.utf8.elementsEqual(recordType.utf8) else { return }
        let named = query.filters.map(\.fieldName) + query.sort.map(\.fieldName)
        if let field = named.first(where: isEncrypted) {
            throw FieldEncryptionError(
                .encryptedFieldInQuery, field: field,
                "a query of '\(recordType)' names encrypted field '\(field)', which the server cannot compare")
        }
    }
}
