import CloudCodable
import CloudProtocol
import Foundation

/// The rules of asset values in records: what a saved `ASSETID` value must
/// prove, how the stored record names its assets, and how an answer's
/// records carry their download URLs.
///
/// A stored asset value is `{fileChecksum, size, downloadURL: "cumulus-asset:<id>"}`:
/// the place of the download URL holds the asset's id, which no answer
/// shows; every answer puts a signed URL there instead.
enum AssetRules {
    /// What the stored value's `downloadURL` starts with.
    static let idPrefix = "cumulus-asset:"

    /// A new id for an asset, an upload ticket or a receipt: 128 random bits, URL-safe.
    static func makeID() -> String { ShareRules.makeShortGUID() }

    /// The value a stored record keeps for an asset.
    static func storedValue(id: String, checksum: String?, size: Int64?) -> Asset {
        Asset(fileChecksum: checksum, size: size, downloadURL: idPrefix + id)
    }

    /// The id of a stored value's asset; `nil` for a value stored before
    /// assets were kept (it passes through as it was saved).
    static func assetID(of value: Asset) -> String? {
        guard let url = value.downloadURL, url.hasPrefix(idPrefix) else { return nil }
        return String(url.dropFirst(idPrefix.count))
    }

    /// The assets a stored record holds, by field: the ids of its stored values.
    static func assetIDs(in record: Record?) -> Set<ExactName> {
        guard let record else { return [] }
        var ids = Set<ExactName>()
        forEachAsset(in: record.fields) { _, value in
            if let id = assetID(of: value) { ids.insert(ExactName(id)) }
        }
        return ids
    }

    /// Calls `body` with each asset value of the fields (single and in lists).
    static func forEachAsset(in fields: RecordFields, _ body: (String, Asset) -> Void) {
        for position in fields.indices {
            switch fields.type(at: position) {
            case .asset, .assetList:
                switch fields[position] {
                case (let name, .asset(let value)): body(name, value)
                case (let name, .assetList(let list)): for value in list { body(name, value) }
                default: break
                }
            default: continue
            }
        }
    }

    /// Whether the record has an asset field.
    static func hasAssets(_ record: Record) -> Bool {
        let fields = record.fields
        return fields.indices.contains {
            let type = fields.type(at: $0)
            return type == .asset || type == .assetList
        }
    }

    /// Whether a record's wire form may hold an asset field: it names the type.
    static func mayHoldAssets(_ bytes: [UInt8]) -> Bool {
        WireBytes.contain(#""ASSETID"#, in: bytes)
    }

    /// Why an upload may not be asked for this field of this record type,
    /// or `nil`: the schema must allow an asset (or asset list) there.
    static func fieldRefusal(_ request: AssetUploadRequest, schema: Schema, environment: CloudEnvironment) -> String? {
        guard !request.recordType.isEmpty else { return "an asset upload needs the record's type" }
        guard !request.fieldName.isEmpty else { return "an asset upload needs the field's name" }
        guard let known = schema.type(ofField: request.fieldName, in: request.recordType) else {
            guard environment == .production else { return nil }
            return "field '\(request.fieldName)' of record type '\(request.recordType)' is not in the production "
                + "schema; deploy the development schema to add it"
        }
        guard known == .asset || known == .assetList else {
            return "field '\(request.fieldName)' of record type '\(request.recordType)' is a \(known.rawValue), "
                + "not an ASSETID"
        }
        return nil
    }
}

/// The receipts a `records/modify` request carries, with their assets, read
/// once at the start of its transaction.
struct AssetReceipts: Sendable {
    var receipts: [ExactName: StoredAssetReceipt] = [:]
    var assets: [ExactName: StoredAsset] = [:]

    /// Reads the receipts of the asset values the saves send.
    static func load(for operations: [RecordOperation], _ transaction: any StorageTransaction) async throws
        -> AssetReceipts
    {
        var wanted = Set<ExactName>()
        for operation in operations where !operation.type.isDelete {
            AssetRules.forEachAsset(in: operation.record.fields) { _, value in
                if let receipt = value.receipt { wanted.insert(ExactName(receipt)) }
            }
        }
        guard !wanted.isEmpty else { return AssetReceipts() }
        var loaded = AssetReceipts()
        for receipt in try await transaction.assetReceipts(ids: wanted.sorted().map(\.string)) {
            loaded.receipts[ExactName(receipt.id)] = receipt
        }
        let assetIDs = Set(loaded.receipts.values.map { ExactName($0.asset) })
        for asset in try await transaction.assets(ids: assetIDs.sorted().map(\.string)) {
            loaded.assets[ExactName(asset.id)] = asset
        }
        return loaded
    }

    /// The stored form of the asset values a save sends, or why one is refused.
    ///
    /// A value with a receipt must carry a receipt of this user for this
    /// field of this record (of this zone) that has not expired. A value
    /// without one keeps an asset the field holds already, found by its
    /// checksum: what re-saving a fetched record sends. Anything else is refused.
    func resolve(
        _ sent: RecordFields, existing: Record?, recordName: String, zone: Int64, user: String, now: Int64
    ) -> Result<[(String, FieldValue)], CloudError> {
        var held: [ExactName: [Asset]] = [:]
        if let existing {
            AssetRules.forEachAsset(in: existing.fields) { name, value in
                held[ExactName(name), default: []].append(value)
            }
        }
        var resolved: [(String, FieldValue)] = []
        for position in sent.indices {
            let (field, value) = sent[position]
            let stored: Result<FieldValue, CloudError>
            switch value {
            case .asset(let asset):
                stored = resolve(asset, field: field, held: held[ExactName(field)] ?? [], recordName, zone, user, now)
                    .map(FieldValue.asset)
            case .assetList(let list):
                var values: [Asset] = []
                var failure: CloudError?
                for asset in list {
                    switch resolve(asset, field: field, held: held[ExactName(field)] ?? [], recordName, zone, user, now)
                    {
                    case .success(let value): values.append(value)
                    case .failure(let error): failure = failure ?? error
                    }
                }
                stored = failure.map { .failure($0) } ?? .success(.assetList(values))
            default:
                continue
            }
            switch stored {
            case .success(let value): resolved.append((field, value))
            case .failure(let error): return .failure(error)
            }
        }
        return .success(resolved)
    }

    private func resolve(
        _ asset: Asset, field: String, held: [Asset], _ recordName: String, _ zone: Int64, _ user: String, _ now: Int64
    ) -> Result<Asset, CloudError> {
        func refusal(_ reason: String) -> Result<Asset, CloudError> {
            .failure(CloudError(.badRequest, reason: "field '\(field)': \(reason)", recordName: recordName))
        }
        guard let receipt = asset.receipt else {
            guard let checksum = asset.fileChecksum,
                let kept = held.first(where: { $0.fileChecksum.map(checksum.isExactly) ?? false })
            else {
                return refusal(
                    "an asset without a receipt must be one the field holds already (same fileChecksum); "
                        + "upload it and save the receipt")
            }
            return .success(kept)
        }
        guard let row = receipts[ExactName(receipt)] else { return refusal("the asset's receipt is unknown") }
        guard row.expires > now else { return refusal("the asset's receipt has expired; upload the file again") }
        guard row.user.isExactly(user) else { return refusal("the asset's receipt belongs to another user") }
        guard row.zone == zone, row.recordName.isExactly(recordName) else {
            return refusal("the asset's receipt was given for another record")
        }
        guard row.fieldName.isExactly(field) else { return refusal("the asset's receipt was given for another field") }
        guard let stored = assets[ExactName(row.asset)], let size = stored.size, let checksum = stored.checksum else {
            return refusal("the asset of the receipt is gone; upload the file again")
        }
        if let sentChecksum = asset.fileChecksum, !sentChecksum.isExactly(checksum) {
            return refusal("the fileChecksum is not that of the uploaded file")
        }
        if let sentSize = asset.size, sentSize != size {
            return refusal("the size is not that of the uploaded file")
        }
        return .success(AssetRules.storedValue(id: stored.id, checksum: checksum, size: size))
    }
}

/// Signed download tokens: `<asset id>.<expiry>.<signature>`, the expiry in
/// milliseconds since 1970 in base 36, the signature the base64url
/// HMAC-SHA256 of the first two parts under the storage's secret.
enum AssetToken {
    static func make(assetID: String, expires: Int64, secret: [UInt8]) -> String {
        let payload = "\(assetID).\(String(expires, radix: 36))"
        return payload + "." + base64URL(HMACSHA256.code(for: Array(payload.utf8), key: secret))
    }

    /// The asset and expiry of a token the secret signed, or `nil`.
    static func verify(_ token: String, secret: [UInt8]) -> (assetID: String, expires: Int64)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, let expires = Int64(parts[1], radix: 36) else { return nil }
        let payload = "\(parts[0]).\(parts[1])"
        let expected = base64URL(HMACSHA256.code(for: Array(payload.utf8), key: secret))
        guard HMACSHA256.isEqual(Array(expected.utf8), Array(parts[2].utf8)) else { return nil }
        return (String(parts[0]), expires)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

/// Puts signed download URLs into the asset values of the records an
/// answer carries, in place of the stored ids.
struct AssetPresenter: Sendable {
    var secret: [UInt8]
    var expires: Int64
    /// `publicURL`, or empty for paths on the server asked.
    var base: String

    func url(forAsset id: String) -> String {
        base + "/assets/1/download/" + AssetToken.make(assetID: id, expires: expires, secret: secret) + "/${f}"
    }

    func present(_ record: Record) -> Record {
        guard AssetRules.hasAssets(record) else { return record }
        var presented = record
        let fields = record.fields
        for position in fields.indices {
            switch fields[position] {
            case (let name, .asset(let value)): presented.fields[name] = .asset(present(value))
            case (let name, .assetList(let list)): presented.fields[name] = .assetList(list.map(present))
            default: continue
            }
        }
        return presented
    }

    private func present(_ value: Asset) -> Asset {
        guard let id = AssetRules.assetID(of: value) else { return value }
        var presented = value
        presented.downloadURL = url(forAsset: id)
        presented.receipt = nil
        return presented
    }
}

extension Record {
    /// The stored record without the ids of its assets: what a look at
    /// storage shows where no download URL is made.
    package func withoutAssetIDs() -> Record {
        guard AssetRules.hasAssets(self) else { return self }
        func strip(_ value: Asset) -> Asset {
            guard AssetRules.assetID(of: value) != nil else { return value }
            var stripped = value
            stripped.downloadURL = nil
            return stripped
        }
        var record = self
        for (name, value) in fields {
            switch value {
            case .asset(let asset): record.fields[name] = .asset(strip(asset))
            case .assetList(let list): record.fields[name] = .assetList(list.map(strip))
            default: continue
            }
        }
        return record
    }
}
