import CloudCodable
import CloudProtocol

/// A record is more than its model: devices on other versions of the app
/// write fields this model does not declare. An edit therefore changes only
/// the fields the model changed against its own reading of the version it
/// was based on, on top of that version as the server holds it; whatever
/// else the record holds goes along untouched.
extension Replica {
    /// A version an edit builds on: the record as the server holds it,
    /// every field included, and this model's reading of it (`nil` when it
    /// does not decode).
    struct EditBase {
        var record: Record
        var model: Model?
    }

    /// The version of the record with change tag `tag` that this replica
    /// keeps: the server's last, or an earlier one.
    func editBase(of name: String, tag: String?) -> EditBase? {
        guard let tag else { return nil }
        if let version = server[name], version.metadata?.changeTag == tag {
            guard let record = try? version.record() else { return nil }
            return EditBase(record: record, model: version.model)
        }
        guard let json = earlier[name]?.first(where: { $0.tag == tag })?.json,
            let record = try? WireFormat.decodeRecord(from: json)
        else { return nil }
        return EditBase(record: record, model: try? decoder.decode(Model.self, from: readable(record)))
    }

    /// `edited`, a model's record, as an edit of `base`: the base's record
    /// with the fields the model changed against its own encoding of the
    /// base. Without a base (a new record) it is `edited` itself.
    func record(_ edited: Record, editing base: EditBase?) -> Record {
        guard let base else { return edited }
        let original = base.model.flatMap(syncedEncoding)
        var record = edited
        record.fields = Self.fields(of: base.record.fields, changedFrom: original?.fields, to: edited.fields)
        // The parent follows the same rule: kept unless the model changed it.
        if edited.parent == original?.parent { record.parent = base.record.parent }
        return record
    }

    /// `base` with the changes from `original` to `edited`: the fields
    /// whose values differ are set, and the fields `original` has and
    /// `edited` lacks are removed. Without `original` (the base does not
    /// decode as this model) nothing is removed.
    static func fields(of base: RecordFields, changedFrom original: RecordFields?, to edited: RecordFields)
        -> RecordFields
    {
        var result = base
        for (name, value) in edited where original?[name] != value {
            result[name] = value
        }
        if let original {
            for (name, _) in original where edited[name] == nil {
                result[name] = nil
            }
        }
        return result
    }

    /// A merged record with the edits of the queued save that the merge
    /// could not see: fields this model does not declare that the queued
    /// save changed against its base (an earlier version of the app queued
    /// it before the update) and the server still holds as the base did.
    /// A field the server changed too keeps the server's value: no
    /// resolver of this model can weigh it.
    func keepingQueuedEdits(_ merged: Record, queued: Record, base: Record, server: Record, resolved: Model)
        -> Record
    {
        guard let known = (try? limitlessEncoder.encode(resolved))?.fields else { return merged }
        var result = merged
        for (field, value) in queued.fields where field != WriteLineage.field && known[field] == nil {
            if value != base.fields[field], server.fields[field] == base.fields[field] { result.fields[field] = value }
        }
        for (field, _) in base.fields where queued.fields[field] == nil && known[field] == nil {
            if server.fields[field] == base.fields[field] { result.fields[field] = nil }
        }
        return result
    }

    /// A merged record whose fields the resolver took from the local change
    /// holds them as the queued record does. A model that reads a missing
    /// field as a default (a required field's upgrade path) would otherwise
    /// write that default where the queued change, made by an earlier
    /// version of the app, cleared the field.
    func spelledAsQueued(_ merged: Record, resolved: Model, client: Model, queued: Record, server: Model) -> Record {
        guard let resolvedFields = (try? limitlessEncoder.encode(resolved))?.fields,
            let clientFields = (try? limitlessEncoder.encode(client))?.fields,
            let serverFields = (try? limitlessEncoder.encode(server))?.fields
        else { return merged }
        var result = merged
        for (field, value) in resolvedFields where clientFields[field] == value && serverFields[field] != value {
            result.fields[field] = queued.fields[field]
        }
        return result
    }

    /// The record a model encodes to as the server would hold it: its
    /// local-only fields left out, so that a server's field of the same
    /// name (an earlier version of the app synced it) is never cleared.
    func syncedEncoding(of model: Model) -> Record? {
        guard var record = try? limitlessEncoder.encode(model) else { return nil }
        _ = Self.takingLocalFields(from: &record)
        return record
    }

    /// An encoder without the size limit, for versions the server already holds.
    var limitlessEncoder: RecordEncoder {
        var encoder = settings.encoder
        encoder.sizeLimit = .max
        return encoder
    }

    // MARK: Sending

    /// The operation that sends the pending save `record`, an edit of the
    /// version its change tag names: an `update` of the fields that differ
    /// from that version (and of those to clear, where the database can),
    /// or a `replace` of the whole record. Either way a field of the
    /// server's version that this model does not encode goes along as it
    /// is; only one the model encoded for that version and no longer does
    /// is cleared.
    func saveOperation(_ record: Record, name: String) -> RecordOperation {
        guard let tag = record.changeTag else { return RecordOperation(.create, record) }
        guard let base = editBase(of: name, tag: tag) else { return RecordOperation(.replace, record) }
        let original = base.model.flatMap(syncedEncoding)
        var whole = record
        var cleared: [String] = []
        for (field, value) in base.record.fields where record.fields[field] == nil {
            if original?.fields[field] != nil {
                cleared.append(field)
            } else {
                // A pending save written before records kept every field.
                whole.fields[field] = value
            }
        }
        let clearsParent = record.parent == nil && base.record.parent != nil && original?.parent != nil
        if !clearsParent, whole.parent == nil { whole.parent = base.record.parent }
        let needsReplace = clearsParent || (!cleared.isEmpty && !settings.clearsFields)
        guard settings.sendsFieldDeltas, !needsReplace else { return RecordOperation(.replace, whole) }
        var delta = record
        delta.fields = RecordFields()
        for (field, value) in record.fields where base.record.fields[field] != value {
            delta.fields[field] = value
        }
        delta.parent = whole.parent
        return RecordOperation(.update, delta, clearedFields: cleared)
    }
}
