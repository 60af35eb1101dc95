import CloudCodable
import CloudProtocol

/// Which environment's schema: each container has one per environment.
struct SchemaKey: Hashable, Sendable {
    var container: ExactName
    var environment: CloudEnvironment

    init(container: String, environment: CloudEnvironment) {
        self.container = ExactName(container)
        self.environment = environment
    }
}

/// The field types of an environment: each (record type, field) with the
/// type it was first written with in `development`, or deployed with to
/// `production`.
struct Schema: Sendable {
    private var types: [ExactName: [ExactName: FieldType]] = [:]

    init(_ stored: [StoredFieldType] = []) {
        for type in stored { add(type) }
    }

    /// The type of a field, or `nil` when the schema does not know it.
    func type(ofField field: String, in recordType: String) -> FieldType? {
        types[ExactName(recordType)]?[ExactName(field)]
    }

    /// Adds a field's type unless the field has one already.
    mutating func add(_ type: StoredFieldType) {
        let recordType = ExactName(type.recordType)
        let field = ExactName(type.fieldName)
        if types[recordType]?[field] == nil { types[recordType, default: [:]][field] = type.type }
    }

    /// Why a value of `type` cannot be written to `field` of `recordType`,
    /// or `nil` when it can. `production` accepts only the fields it knows; an empty
    /// list fits any list type (it does not say which list it is).
    func refusal(
        of type: FieldType, isEmptyList: Bool, field: String, recordType: String, environment: CloudEnvironment
    ) -> String? {
        guard let known = self.type(ofField: field, in: recordType) else {
            guard environment == .production else { return nil }
            return "field '\(field)' of record type '\(recordType)' is not in the production schema; "
                + "deploy the development schema to add it"
        }
        if known == type || (isEmptyList && known.isList) { return nil }
        return "field '\(field)' of record type '\(recordType)' is a \(known.rawValue), not a \(type.rawValue)"
    }
}

extension RecordService {
    /// The environment's schema, read from storage on first use.
    func schema(_ key: SchemaKey) async throws -> Schema {
        if let cached = schemas.withLock({ $0[key] }) { return cached }
        let stored = try await storage.read { transaction in
            try await transaction.fieldTypes(container: key.container.string, environment: key.environment)
        }
        let schema = Schema(stored)
        return schemas.withLock { schemas in
            // A write that committed meanwhile may have filled it already.
            if let cached = schemas[key] { return cached }
            schemas[key] = schema
            return schema
        }
    }

    /// Adds field types a write recorded; the first type of a field stays.
    func learn(_ types: [StoredFieldType], in key: SchemaKey) {
        schemas.withLock { schemas in
            guard var schema = schemas[key] else { return }
            for type in types { schema.add(type) }
            schemas[key] = schema
        }
    }

    /// Replaces an environment's schema with the types storage holds, when
    /// another server's writes made the one in memory out of date.
    func reload(_ stored: [StoredFieldType], in key: SchemaKey) {
        schemas.withLock { $0[key] = Schema(stored) }
    }

    /// The types the environment's schema gives fields, for reading fields
    /// sent without `type`.
    public func fieldTypes(container: String, environment: CloudEnvironment) async throws -> FieldTypeLookup {
        let key = SchemaKey(container: container, environment: environment)
        _ = try await schema(key)
        let schemas = schemas
        return { recordType, fieldName in
            schemas.withLock { $0[key]?.type(ofField: fieldName, in: recordType) }
        }
    }

    /// Copies the `development` schema of a container to `production`:
    /// production then accepts the fields development has learned. Returns
    /// the number of field types production did not have.
    ///
    /// - Throws: `BAD_REQUEST` naming the field when production already
    ///   gives a field another type than development (nothing is copied).
    @discardableResult
    public func deploySchema(container: String) async throws -> Int {
        let added = try await storage.write { transaction -> [StoredFieldType] in
            let development = try await transaction.fieldTypes(container: container, environment: .development)
            let production = Schema(try await transaction.fieldTypes(container: container, environment: .production))
            var missing: [StoredFieldType] = []
            for type in development {
                guard let deployed = production.type(ofField: type.fieldName, in: type.recordType) else {
                    missing.append(type)
                    continue
                }
                guard deployed == type.type else {
                    throw CloudError(
                        .badRequest,
                        reason: "field '\(type.fieldName)' of record type '\(type.recordType)' is a "
                            + "\(deployed.rawValue) in production and a \(type.type.rawValue) in development")
                }
            }
            try await transaction.addFieldTypes(missing, container: container, environment: .production)
            return missing
        }
        let stored = try await storage.read { transaction in
            try await transaction.fieldTypes(container: container, environment: .production)
        }
        reload(stored, in: SchemaKey(container: container, environment: .production))
        return added.count
    }
}
