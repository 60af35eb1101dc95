import CloudCodable

// The bodies of `assets/upload` and of the upload URL's answer, which both
// ends write or read.

extension JSONWriter {
    /// Appends `{"tokens":[{"recordName":…,"fieldName":…,"url":…}]}`.
    package mutating func appendAssetUploadTargets(_ targets: [AssetUploadTarget]) {
        appendRaw(#"{"tokens":["#)
        for index in targets.indices {
            appendRaw(index > 0 ? #",{"recordName":"# : #"{"recordName":"#)
            appendString(targets[index].recordName)
            appendRaw(#","fieldName":"#)
            appendString(targets[index].fieldName)
            appendRaw(#","url":"#)
            appendString(targets[index].url)
            append(byte: UInt8(ascii: "}"))
        }
        appendRaw("]}")
    }

    /// Appends the upload URL's answer, `{"singleFile":{"fileChecksum":…,"size":…,"receipt":…}}`.
    package mutating func appendSingleFile(_ asset: Asset) {
        appendRaw(#"{"singleFile":{"fileChecksum":"#)
        appendString(asset.fileChecksum ?? "")
        appendRaw(#","size":"#)
        appendInt(asset.size ?? 0)
        appendRaw(#","receipt":"#)
        appendString(asset.receipt ?? "")
        appendRaw("}}")
    }
}

extension WireBodyReader {
    /// Reads the `tokens` of an `assets/upload` answer.
    package mutating func readAssetUploadTargets(_ what: String) throws -> [AssetUploadTarget] {
        var targets: [AssetUploadTarget]?
        try readObject(what) { reader, key in
            guard key == "tokens" else { return try reader.skipValue() }
            var list: [AssetUploadTarget] = []
            try reader.readArray("'tokens'") { reader in
                let start = reader.position
                var members: [String: String] = [:]
                try reader.readObject("token \(list.count)") { reader, key in
                    switch key {
                    case "recordName", "fieldName", "url": members[key] = try reader.readString("\(key), a string")
                    default: try reader.skipValue()
                    }
                }
                for key in ["recordName", "fieldName", "url"] where members[key] == nil {
                    throw reader.missing(key, in: "token \(list.count)", at: start)
                }
                list.append(
                    AssetUploadTarget(
                        recordName: members["recordName"]!, fieldName: members["fieldName"]!, url: members["url"]!))
            }
            targets = list
        }
        guard let targets else { throw missing("tokens", in: what, at: 0) }
        return targets
    }

    /// Reads the `tokens` of an `assets/upload` request: `recordName` may be
    /// missing (the server picks one); `recordType` and `fieldName` may not.
    package mutating func readAssetUploadRequests(_ what: String) throws -> [AssetUploadRequest] {
        var list: [AssetUploadRequest] = []
        try readArray(what) { reader in
            let start = reader.position
            var name: String?
            var type: String?
            var field: String?
            try reader.readObject("token \(list.count)") { reader, key in
                switch key {
                case "recordName": name = try reader.readOptionalString("recordName, a string")
                case "recordType": type = try reader.readString("recordType, a string")
                case "fieldName": field = try reader.readString("fieldName, a string")
                default: try reader.skipValue()
                }
            }
            guard let type else { throw reader.missing("recordType", in: "token \(list.count)", at: start) }
            guard let field else { throw reader.missing("fieldName", in: "token \(list.count)", at: start) }
            list.append(AssetUploadRequest(recordName: name, recordType: type, fieldName: field))
        }
        return list
    }

    /// Reads the upload URL's answer, `{"singleFile":{…}}`, as the asset to save.
    package mutating func readSingleFile(_ what: String) throws -> Asset {
        var asset: Asset?
        try readObject(what) { reader, key in
            guard key == "singleFile" else { return try reader.skipValue() }
            var file = Asset()
            try reader.readObject("singleFile") { reader, key in
                switch key {
                case "fileChecksum": file.fileChecksum = try reader.readOptionalString("fileChecksum, a string")
                case "size": file.size = try reader.skipNull() ? nil : reader.readInt64("size, an integer")
                case "receipt": file.receipt = try reader.readOptionalString("receipt, a string")
                case "referenceChecksum":
                    file.referenceChecksum = try reader.readOptionalString("referenceChecksum, a string")
                case "wrappingKey": file.wrappingKey = try reader.readOptionalString("wrappingKey, a string")
                default: try reader.skipValue()
                }
            }
            asset = file
        }
        guard let asset else { throw missing("singleFile", in: what, at: 0) }
        return asset
    }
}
