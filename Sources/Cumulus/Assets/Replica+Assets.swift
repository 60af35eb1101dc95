import CloudCodable
import CloudProtocol

/// One asset value of a record's fields.
struct AssetValue: Sendable {
    var field: String
    /// The value's place in an `ASSETID_LIST`; `nil` for an `ASSETID`.
    var position: Int?
    var asset: Asset
}

/// An asset as a field holds it: the server keeps the bytes of a checksum
/// only for the field it was uploaded for.
struct FieldAsset: Sendable, Hashable {
    var field: String
    var checksum: String
}

extension RecordFields {
    /// Whether a field holds an asset or a list of them, read from the
    /// fields' types without decoding their values.
    var holdsAssets: Bool {
        indices.contains {
            let kind = self.type(at: $0)
            return kind == .asset || kind == .assetList
        }
    }

    /// Every asset value of the fields, in the fields' order.
    var assetValues: [AssetValue] {
        guard holdsAssets else { return [] }
        var values: [AssetValue] = []
        for index in indices {
            switch self[index] {
            case (let field, .asset(let asset)):
                values.append(AssetValue(field: field, position: nil, asset: asset))
            case (let field, .assetList(let list)):
                for (position, asset) in list.enumerated() {
                    values.append(AssetValue(field: field, position: position, asset: asset))
                }
            default: continue
            }
        }
        return values
    }

    /// Writes an upload's receipt into the asset value at `field` and
    /// `position` (see ``AssetValue``).
    mutating func setReceipt(_ receipt: String, field: String, position: Int?) {
        switch (self[field], position) {
        case (.asset(var asset)?, nil):
            asset.receipt = receipt
            self[field] = .asset(asset)
        case (.assetList(var list)?, let position?) where list.indices.contains(position):
            list[position].receipt = receipt
            self[field] = .assetList(list)
        default:
            preconditionFailure("Internal inconsistency: no asset at \(field), \(String(describing: position))")
        }
    }
}

extension Replica {
    /// The assets the server's version of the record holds: a save needs
    /// not send their bytes again.
    func heldAssets(of name: String) -> Set<FieldAsset> {
        guard let version = server[name], let record = try? version.record() else { return [] }
        var held = Set<FieldAsset>()
        for value in record.fields.assetValues {
            if let checksum = value.asset.fileChecksum {
                held.insert(FieldAsset(field: value.field, checksum: checksum))
            }
        }
        return held
    }

    /// The checksums of the assets the pending saves hold: their local
    /// copies stay until the server has the saves.
    var pendingAssetChecksums: Set<String> {
        var checksums = Set<String>()
        for change in pending.values {
            guard case .save(let record) = change.kind else { continue }
            for value in record.fields.assetValues {
                if let checksum = value.asset.fileChecksum { checksums.insert(checksum) }
            }
        }
        return checksums
    }

    /// A record of the replica that holds the asset with a download URL:
    /// the records whose JSON names its checksum first, then the others
    /// that hold an asset, each in the order of their names.
    func location(of asset: CloudAsset) -> AssetLocation? {
        let needle = Array(asset.checksum.utf8)
        var candidates: [String] = []
        var others: [String] = []
        for (name, version) in server {
            if Self.contains(version.json, needle) {
                candidates.append(name)
            } else if Self.contains(version.json, Array("ASSETID".utf8)) {
                others.append(name)
            }
        }
        for name in candidates.sorted() + others.sorted() {
            guard let record = try? server[name]?.record() else { continue }
            if let location = AssetLocation(of: asset, in: record) { return location }
        }
        return nil
    }

    private static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, bytes.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first, bytes[index..<index + needle.count].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}

/// Where an asset can be downloaded: a record of the engine that holds it.
struct AssetLocation: Sendable {
    var recordName: String
    var field: String
    var value: Asset

    /// The first value of the record with the asset's checksum and a
    /// download URL, or `nil`.
    init?(of asset: CloudAsset, in record: Record) {
        let found = record.fields.assetValues.first {
            $0.asset.fileChecksum == asset.checksum && $0.asset.downloadURL != nil
        }
        guard let found else { return nil }
        self.init(recordName: record.recordName, field: found.field, value: found.asset)
    }

    init(recordName: String, field: String, value: Asset) {
        self.recordName = recordName
        self.field = field
        self.value = value
    }
}
