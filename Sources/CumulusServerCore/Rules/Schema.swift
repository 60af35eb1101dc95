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

/// A field of a record type as each environment's schema types it: what
/// the console's schema page shows side by side.
public struct SchemaField: Sendable, Hashable {
    /// The record type.
    public var recordType: String
    /// The field's name.
    public var fieldName: String
    /// The field's type in `development`, or `nil` when it has none there.
    public var development: FieldType?
    /// The field's type in `production`, or `nil` when it has none there.
    public var production: FieldType?

    /// Creates a row.
    public init(recordType: String, fieldName: String, development: FieldType?, production: FieldType?) {
        self.recordType = recordType
        self.fieldName = fieldName
        self.development = development
        self.production = production
    }

    /// Whether deploying would add the field to `production`.
    public var isDeployable: Bool { development != nil && production == nil }

    /// Whether the environments give the field different types (deploying is then refused).
    public var isMismatched: Bool {
        guard let development, let production else { return false }
        return development != production
    }
}

extension RecordService {
    /// Every field either environment's schema of a container types, by
    /// record type and then field name, compared as bytes; read in one
    /// transaction, so the two sides are of one moment.
    ///
    /// - Throws: `NOT_FOUND` for an unknown container.
    public func schemaFields(container: String) async throws -> [SchemaField] {
        try NameRules.check(container, "the container name")
        let (development, production) = try await storage.read { transaction in
            guard try await transaction.containerTokenHash(named: container) != nil else {
                throw CloudError(.notFound, reason: "no container '\(container)'")
            }
            return (
                try await transaction.fieldTypes(container: container, environment: .development),
                try await transaction.fieldTypes(container: container, environment: .production)
            )
        }
        var fields: [ExactName: [ExactName: SchemaField]] = [:]
        for type in development {
            fields[ExactName(type.recordType), default: [:]][ExactName(type.fieldName)] = SchemaField(
                recordType: type.recordType, fieldName: type.fieldName, development: type.type, production: nil)
        }
        for type in production {
            let recordType = ExactName(type.recordType)
            let field = ExactName(type.fieldName)
            var row =
                fields[recordType]?[field]
                ?? SchemaField(
                    recordType: type.recordType, fieldName: type.fieldName, development: nil, production: nil)
            row.production = type.type
            fields[recordType, default: [:]][field] = row
        }
        return fields.sorted { $0.key < $1.key }.flatMap { _, byField in
            byField.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    /// Gives a field of a record type a type in the container's
    /// `development` schema, as a first write of such a value would.
    ///
    /// - Throws: `BAD_REQUEST` for an empty name or one the protocol
    ///   refuses (``NameRules``), or when the field has a type already
    ///   (the first type of a field stays); `NOT_FOUND` for an unknown container.
    public func addDevelopmentFieldType(_ type: StoredFieldType, container: String) async throws {
        try NameRules.check(container, "the container name")
        try NameRules.check(type.recordType, "the record type")
        try NameRules.check(type.fieldName, "the field name")
        guard !type.recordType.isEmpty, !type.fieldName.isEmpty else {
            throw CloudError(.badRequest, reason: "a record type and a field name may not be empty")
        }
        let stored = try await storage.write { transaction -> [StoredFieldType] in
            guard try await transaction.containerTokenHash(named: container) != nil else {
                throw CloudError(.notFound, reason: "no container '\(container)'")
            }
            let schema = Schema(try await transaction.fieldTypes(container: container, environment: .development))
            if let known = schema.type(ofField: type.fieldName, in: type.recordType) {
                throw CloudError(
                    .badRequest,
                    reason: "field '\(type.fieldName)' of record type '\(type.recordType)' is a "
                        + "\(known.rawValue) in development already; a field keeps its first type")
            }
            try await transaction.addFieldTypes([type], container: container, environment: .development)
            return try await transaction.fieldTypes(container: container, environment: .development)
        }
        // As deploy does: the cache takes the committed schema, so the next write sees the new type.
        reload(stored, in: SchemaKey(container: container, environment: .development))
    }
}
