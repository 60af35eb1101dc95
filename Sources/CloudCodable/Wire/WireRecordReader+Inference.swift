extension WireRecordReader {
    /// The type of a value sent without `type` for a field the schema does
    /// not know, from its JSON alone, or `nil` for `null`; `depth` is the
    /// number of arrays and objects open around it. Leaves the cursor where
    /// it was.
    ///
    /// A string is STRING; a number INT64, or DOUBLE with a fraction or an
    /// exponent; a dictionary LOCATION, REFERENCE or ASSETID by its keys (see
    /// ``DictionaryShape``); a list the list type of its elements. Anything
    /// else, and a dictionary or list that names no single type, is an
    /// `.unknownFieldType` error; a dictionary without the key its shape
    /// needs is a `.missingKey` error.
    mutating func inferType(depth: Int) throws(WireFormatError) -> FieldType? {
        let restart = scanner.position
        defer { scanner.position = restart }
        let first = try scanner.peek("a value")
        let start = scanner.position
        switch first {
        case JSONText.quote:
            return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try scanner.scanNumber().isInteger ? .int64 : .double
        case UInt8(ascii: "n"):
            try scanner.scanLiteral("null")
            return nil
        case UInt8(ascii: "{"):
            return try inferDictionaryType(depth: depth).fieldType
        case UInt8(ascii: "["):
            return try inferListType(depth: depth)
        default:
            throw scanner.error(
                .unknownFieldType, at: start,
                "no 'type', and \(JSONScanner.describeValue(first)) does not say which field type it is")
        }
    }

    /// The list type of the list at the cursor, from its elements, which
    /// must all be strings, all numbers, or all dictionaries of one shape.
    /// Leaves the cursor after the list.
    private mutating func inferListType(depth: Int) throws(WireFormatError) -> FieldType {
        let start = scanner.position
        guard try scanner.enterArray("a list") else {
            throw scanner.error(
                .unknownFieldType, at: start, "no 'type', and an empty list does not say which list type it is")
        }
        var element: FieldType?
        var index = 0
        repeat {
            let byte = try scanner.peek("a list element")
            let next: FieldType
            switch byte {
            case JSONText.quote:
                _ = try scanner.scanString()
                next = .string
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                next = try scanner.scanNumber().isInteger ? .int64 : .double
            case UInt8(ascii: "{"):
                do {
                    next = try inferDictionaryType(depth: depth + 1).fieldType
                } catch {
                    throw WireFormatError(
                        error.code, offset: error.offset, message: "element \(index): \(error.message)")
                }
            default:
                throw scanner.error(
                    .unknownFieldType,
                    "no 'type', and a list holding \(JSONScanner.describeValue(byte)) does not say its type")
            }
            switch (element, next) {
            case (nil, _): element = next
            case (.int64, .double), (.double, .int64): element = .double
            case (let known?, _) where known == next: break
            case (let known?, _):
                throw scanner.error(
                    .unknownFieldType, at: start,
                    "no 'type', and the list mixes \(Self.plural(known)) and \(Self.plural(next)) (element \(index))")
            }
            index &+= 1
        } while try scanner.nextElement()
        switch element {
        case .string: return .stringList
        case .int64: return .int64List
        case .double: return .doubleList
        case .location: return .locationList
        case .reference: return .referenceList
        case .asset: return .assetList
        default:
            preconditionFailure("Internal inconsistency: a list element inferred as \(String(describing: element))")
        }
    }

    /// The elements of a list of `type`, for error messages.
    private static func plural(_ type: FieldType) -> String {
        switch type {
        case .string: "strings"
        case .int64, .double: "numbers"
        case .location: "locations"
        case .reference: "references"
        default: "assets"
        }
    }

    /// The kinds of dictionary that say their field type by their keys, as
    /// the reference describes them: a location has `latitude` and
    /// `longitude`, a reference `recordName`, an asset `fileChecksum` or
    /// `receipt`. Keys of no shape are allowed (the typed readers skip them
    /// too); keys of two shapes make the dictionary ambiguous.
    private enum DictionaryShape {
        case location, reference, asset

        /// The shape whose dictionary may have `key`, or `nil` for a key of none.
        init?(key: WireKey) {
            switch key {
            case .latitude, .longitude, .horizontalAccuracy, .verticalAccuracy, .altitude, .speed, .course,
                .timestamp:
                self = .location
            case .recordName, .zoneID, .action:
                self = .reference
            case .fileChecksum, .size, .referenceChecksum, .wrappingKey, .receipt, .downloadURL:
                self = .asset
            default:
                return nil
            }
        }

        /// The field type of a dictionary of this shape.
        var fieldType: FieldType {
            switch self {
            case .location: .location
            case .reference: .reference
            case .asset: .asset
            }
        }

        /// The shape with an article, for error messages.
        var name: String {
            switch self {
            case .location: "a location"
            case .reference: "a reference"
            case .asset: "an asset"
            }
        }
    }

    /// The shape of the dictionary at the cursor, from its keys alone (its
    /// values are checked as JSON, and read later by the shape's reader).
    /// Leaves the cursor after the dictionary.
    private mutating func inferDictionaryType(depth: Int) throws(WireFormatError) -> DictionaryShape {
        let start = scanner.position
        // The first key seen of each shape, for the messages.
        var seen: [(shape: DictionaryShape, key: String)] = []
        // The keys whose value is not null: only those identify a shape.
        var present: Set<WireKey> = []
        if try scanner.enterObject("an object") {
            repeat {
                let span = try scanner.memberKey()
                let key = scanner.withContents(of: span, WireKey.match)
                if let shape = DictionaryShape(key: key), !seen.contains(where: { $0.shape == shape }) {
                    seen.append((shape, try scanner.string(span)))
                } else if key == .unknown {
                    try scanner.validate(span)
                }
                if try scanner.peek("a value") != UInt8(ascii: "n") { present.insert(key) }
                try scanner.skipValue(depth: depth + 1)
            } while try scanner.nextMember()
        }
        guard let (shape, key) = seen.first else {
            throw scanner.error(
                .unknownFieldType, at: start,
                "no 'type', and an object without the keys of a location (latitude, longitude), a reference "
                    + "(recordName) or an asset (fileChecksum or receipt) does not say which field type it is")
        }
        guard seen.count == 1 else {
            let keys = seen.map { "\($0.shape.name)'s '\($0.key)'" }.joined(separator: " and ")
            throw scanner.error(.unknownFieldType, at: start, "no 'type', and an object with \(keys) is ambiguous")
        }
        let missing: String?
        switch shape {
        case .location where !present.contains(.latitude): missing = "'latitude'"
        case .location where !present.contains(.longitude): missing = "'longitude'"
        case .reference where !present.contains(.recordName): missing = "'recordName'"
        case .asset where !present.contains(.fileChecksum) && !present.contains(.receipt):
            missing = "'fileChecksum' or 'receipt'"
        default: missing = nil
        }
        if let missing {
            throw scanner.error(
                .missingKey, at: start,
                "no 'type', and an object with \(shape.name)'s '\(key)' has no \(missing) (or only null)")
        }
        return shape
    }
}
