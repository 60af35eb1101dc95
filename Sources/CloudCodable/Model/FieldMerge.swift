/// The default conflict resolution of ``CloudCodable``: a three-way merge of
/// the records the three values encode to.
enum FieldMerge {
    static func merge<Model: CloudCodable>(client: Model, server: Model, ancestor: Model?) -> Model {
        // The encoders never throw for values the engine already accepted
        // once; if one does, the client's value is the safest answer.
        var limitless = RecordEncoder()
        limitless.sizeLimit = .max
        guard let clientRecord = try? limitless.encode(client),
            let serverRecord = try? limitless.encode(server)
        else { return rebased(client, onto: server) }
        let ancestorFields = ancestor.flatMap { try? limitless.encode($0) }?.fields

        var merged = serverRecord
        merged.fields = merge(
            client: clientRecord.fields, server: serverRecord.fields, ancestor: ancestorFields)
        guard var value = try? RecordDecoder().decode(Model.self, from: merged) else {
            return rebased(client, onto: server)
        }
        value.cloudMetadata = server.cloudMetadata
        return value
    }

    /// Merges field dictionaries: a field that one side left as the ancestor
    /// had it takes the other side's value; otherwise the client's value wins.
    /// A field absent on a side counts as that side's value (`nil`).
    static func merge(
        client: RecordFields, server: RecordFields,
        ancestor: RecordFields?
    ) -> RecordFields {
        guard let ancestor else { return client }
        var result = client
        for key in Set(client.keys).union(server.keys) {
            let base = ancestor[key]
            let mine = client[key]
            let theirs = server[key]
            if mine == base { result[key] = theirs }  // only the server changed it (or nobody)
        }
        return result
    }

    private static func rebased<Model: CloudCodable>(_ client: Model, onto server: Model) -> Model {
        var value = client
        value.cloudMetadata = server.cloudMetadata
        return value
    }
}
