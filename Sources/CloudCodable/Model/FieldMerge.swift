/// The default conflict resolution of ``CloudCodable``: a three-way merge of
/// the records the three values encode to, with the model's
/// ``CloudCodable/cloudTextMergedFields`` merged as text.
enum FieldMerge {
    static func merge<Model: CloudCodable>(client: Model, server: Model, ancestor: Model?) -> Model {
        // The encoders never throw for values the engine already accepted
        // once; if one does, the client's value is the safest answer.
        var limitless = RecordEncoder()
        limitless.sizeLimit = .max
        guard let clientRecord = try? limitless.encode(client),
            let serverRecord = try? limitless.encode(server)
        else { return rebased(client, onto: server) }
        var ancestorFields = ancestor.flatMap { try? limitless.encode($0) }?.fields
        if ancestorFields == nil, client.cloudMetadata == nil {
            // A value made without metadata never saw a server version (two
            // devices created one record name): a field it lacks is one it
            // never had, not one it cleared, so the other side's stays.
            ancestorFields = RecordFields()
        }

        var merged = serverRecord
        merged.fields = merge(
            client: clientRecord.fields, server: serverRecord.fields, ancestor: ancestorFields,
            mergingText: Model.cloudTextMergedFields)
        guard var value = try? RecordDecoder().decode(Model.self, from: merged) else {
            return rebased(client, onto: server)
        }
        value.cloudMetadata = server.cloudMetadata
        return value
    }

    /// Merges field dictionaries: a field that one side left as the ancestor
    /// had it takes the other side's value; a field in `mergingText` that
    /// both sides changed, a string on all three, takes their text merged
    /// (``TextMerge``); otherwise the client's value wins. A field absent on
    /// a side counts as that side's value (`nil`).
    static func merge(
        client: RecordFields, server: RecordFields,
        ancestor: RecordFields?, mergingText: Set<String> = []
    ) -> RecordFields {
        guard let ancestor else { return client }
        var result = client
        for key in Set(client.keys).union(server.keys) {
            let base = ancestor[key]
            let mine = client[key]
            let theirs = server[key]
            if sameValue(mine, base) {
                result[key] = theirs  // only the server changed it (or nobody)
            } else if mergingText.contains(key), !sameValue(theirs, base), case .string(let text)? = base,
                case .string(let clientText)? = mine, case .string(let serverText)? = theirs
            {
                result[key] = .string(TextMerge.merge(ancestor: text, client: clientText, server: serverText))
            }
        }
        return result
    }

    /// Whether two field values are the same. An asset is its contents: a
    /// fresh download URL or a receipt is not a change.
    static func sameValue(_ lhs: FieldValue?, _ rhs: FieldValue?) -> Bool {
        switch (lhs, rhs) {
        case (.asset(let a)?, .asset(let b)?): return sameAsset(a, b)
        case (.assetList(let a)?, .assetList(let b)?):
            return a.count == b.count && zip(a, b).allSatisfy(sameAsset)
        default: return lhs == rhs
        }
    }

    private static func sameAsset(_ lhs: Asset, _ rhs: Asset) -> Bool {
        guard let checksum = lhs.fileChecksum else { return lhs == rhs }
        return checksum == rhs.fileChecksum && lhs.size == rhs.size
    }

    private static func rebased<Model: CloudCodable>(_ client: Model, onto server: Model) -> Model {
        var value = client
        value.cloudMetadata = server.cloudMetadata
        return value
    }
}
