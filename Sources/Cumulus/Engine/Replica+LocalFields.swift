import CloudCodable
import CloudProtocol

/// Fields that never leave the device (``CloudCodable/cloudLocalFields``).
///
/// The replica's records are the records as the server holds them: a
/// model's local fields are taken out as it is encoded, kept in ``local``
/// (and the journal), and put back whenever a record becomes a model
/// again. So they are never sent, a change of them alone changes no
/// record, and a version arriving from the server keeps them.
extension Replica {
    /// Takes the local-only fields out of a model's record.
    static func takingLocalFields(from record: inout Record) -> RecordFields {
        var local = RecordFields()
        guard !Model.cloudLocalFields.isEmpty else { return local }
        for name in Model.cloudLocalFields {
            if let value = record.fields[name] {
                local[name] = value
                record.fields[name] = nil
            }
        }
        return local
    }

    /// `record` as the model reads it: its encrypted fields opened and
    /// this device's local-only fields put back.
    static func readable(_ record: Record, settings: Settings, local: [String: RecordFields]) throws -> Record {
        var record = try settings.opening(record)
        if let fields = local[record.recordName] {
            for (name, value) in fields { record.fields[name] = value }
        }
        return record
    }

    /// `record` as the model reads it (see ``readable(_:settings:local:)``).
    func readable(_ record: Record) throws -> Record {
        try Self.readable(record, settings: settings, local: local)
    }

    /// Keeps `fields` as the record's local-only values, and the model of
    /// the server's version with them. Returns whether they changed.
    @discardableResult
    mutating func setLocal(_ name: String, _ fields: RecordFields, _ effects: inout Effects) -> Bool {
        guard !Model.cloudLocalFields.isEmpty, (local[name] ?? RecordFields()) != fields else { return false }
        if fields.isEmpty {
            local[name] = nil
            effects.journal.remove(JournalKeys.local(name))
        } else {
            local[name] = fields
            let record = Record(recordType: Model.cloudRecordType, recordName: name, zoneID: zoneID, fields: fields)
            // The replica's records were written by the encoder, so they always write again.
            guard let json = try? WireFormat.encode(record) else {
                preconditionFailure("Internal inconsistency: local fields that do not encode")
            }
            effects.journal.set(JournalKeys.local(name), json)
        }
        // The model kept for the server's version reads the values it had.
        if let version = server[name], version.model != nil, let record = try? version.record() {
            let model = try? decoder.decode(Model.self, from: readable(record))
            server[name] = ServerVersion(json: version.json, metadata: version.metadata, model: model)
        }
        // So does the model of the change queued for it: merged with an upload, its
        // older values would win over the upload's (the ancestor reads the new ones).
        if let queued = pendingModels[name], let model = withLocalValues(queued, of: name) {
            pendingModels[name] = model
        }
        return true
    }

    /// `model` with the record's local-only values as the replica holds them.
    private func withLocalValues(_ model: Model, of name: String) -> Model? {
        guard var record = try? limitlessEncoder.encode(model) else { return nil }
        _ = Self.takingLocalFields(from: &record)
        for (field, value) in local[name] ?? RecordFields() { record.fields[field] = value }
        guard var updated = try? decoder.decode(Model.self, from: record) else { return nil }
        updated.cloudMetadata = model.cloudMetadata
        return updated
    }

    /// Forgets the record's local-only values: the record is gone.
    mutating func removeLocal(_ name: String, _ effects: inout Effects) {
        setLocal(name, RecordFields(), &effects)
    }
}
