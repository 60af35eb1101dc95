import CloudCodable

extension JSONWriter {
    /// Appends a query's `{"recordType":…,"filterBy":[…],"sortBy":[…]}`.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a filter value the wire cannot carry.
    package mutating func appendQuery(_ query: RecordQuery) throws {
        appendRaw(#"{"recordType":"#)
        appendString(query.recordType)
        if !query.filters.isEmpty {
            appendRaw(#","filterBy":["#)
            for index in query.filters.indices {
                let filter = query.filters[index]
                appendRaw(index > 0 ? #",{"comparator":"# : #"{"comparator":"#)
                appendString(filter.comparator.rawValue)
                appendRaw(#","fieldName":"#)
                appendString(filter.fieldName)
                appendRaw(#","fieldValue":"#)
                do {
                    try appendFieldValue(filter.fieldValue)
                } catch {
                    throw CloudError(
                        .badRequest, reason: "the filter on '\(filter.fieldName)' cannot be written: \(error)")
                }
                if let distance = filter.distance {
                    appendRaw(#","distance":"#)
                    appendDouble(distance)
                }
                append(byte: UInt8(ascii: "}"))
            }
            append(byte: UInt8(ascii: "]"))
        }
        if !query.sort.isEmpty {
            appendRaw(#","sortBy":["#)
            for index in query.sort.indices {
                appendRaw(index > 0 ? #",{"fieldName":"# : #"{"fieldName":"#)
                appendString(query.sort[index].fieldName)
                if let location = query.sort[index].relativeLocation {
                    appendRaw(#","relativeLocation":{"latitude":"#)
                    appendDouble(location.latitude)
                    appendRaw(#","longitude":"#)
                    appendDouble(location.longitude)
                    append(byte: UInt8(ascii: "}"))
                }
                appendRaw(query.sort[index].ascending ? #","ascending":true}"# : #","ascending":false}"#)
            }
            append(byte: UInt8(ascii: "]"))
        }
        append(byte: UInt8(ascii: "}"))
    }
}

extension WireBodyReader {
    /// Reads a query's `{"recordType":…,"filterBy":…,"sortBy":…}`.
    ///
    /// - Parameters:
    ///   - adjust: The type an untyped filter value has, from its
    ///     comparator and the type the schema knows for its field.
    ///   - refusal: Why a filter value is refused, or `nil` to accept it.
    package mutating func readRecordQuery(
        adjustingFilterType adjust: ((QueryComparator, FieldType) -> FieldType)? = nil,
        refusing refusal: (FieldValue) -> String? = { _ in nil }
    ) throws -> RecordQuery {
        let start = position
        var recordType: String?
        var pending: [PendingFilter] = []
        var sort: [QuerySort] = []
        try readObject("'query'") { reader, key in
            switch key {
            case "recordType": recordType = try reader.readString("recordType, a string")
            case "filterBy":
                if try reader.skipNull() { return }
                try reader.readArray("'filterBy'") { reader in
                    pending.append(try reader.readFilter(pending.count))
                }
            case "sortBy":
                if try reader.skipNull() { return }
                try reader.readArray("'sortBy'") { reader in
                    let at = reader.position
                    var name: String?
                    var ascending = true
                    var relative: Location?
                    try reader.readObject("sort \(sort.count)") { reader, key in
                        switch key {
                        case "fieldName": name = try reader.readString("fieldName, a string")
                        case "ascending": ascending = try reader.skipNull() ? true : reader.readBool()
                        case "relativeLocation": relative = try reader.readRelativeLocation("sort \(sort.count)")
                        default: try reader.skipValue()
                        }
                    }
                    guard let name else { throw reader.missing("fieldName", in: "sort \(sort.count)", at: at) }
                    var key = QuerySort(name, ascending: ascending)
                    key.relativeLocation = relative
                    sort.append(key)
                }
            default: try reader.skipValue()
            }
        }
        guard let recordType else { throw missing("recordType", in: "'query'", at: start) }
        let end = position
        var filters: [QueryFilter] = []
        for filter in pending {
            seek(to: filter.valueOffset)
            let comparator = filter.comparator
            guard
                let value = try readFieldValue(
                    recordType: recordType, fieldName: filter.fieldName,
                    adjustingKnownType: adjust.map { adjust in { adjust(comparator, $0) } })
            else {
                throw error("the filter on '\(filter.fieldName)' has a null value", at: filter.valueOffset)
            }
            if let reason = refusal(value) {
                throw error("the filter on '\(filter.fieldName)' \(reason)", at: filter.valueOffset)
            }
            filters.append(QueryFilter(filter.fieldName, filter.comparator, value, distance: filter.distance))
        }
        seek(to: end)
        return RecordQuery(recordType: recordType, filters: filters, sort: sort)
    }

    /// A filter as read, its value read once the query's record type is known.
    private struct PendingFilter {
        var comparator: QueryComparator
        var fieldName: String
        var valueOffset: Int
        var distance: Double?
    }

    /// Reads a number written as one (not a string holding one).
    private mutating func readJSONNumber(_ what: String) throws -> Double {
        let at = position
        guard try peek() != UInt8(ascii: "\"") else { throw error("\(what): found a string", at: at) }
        return try readDouble(what)
    }

    /// Reads a sort's `relativeLocation`: a location dictionary, of which
    /// `latitude` and `longitude` count.
    private mutating func readRelativeLocation(_ what: String) throws -> Location {
        let start = position
        var latitude: Double?
        var longitude: Double?
        try readObject("\(what): relativeLocation") { reader, key in
            switch key {
            case "latitude": latitude = try reader.readJSONNumber("latitude, a number")
            case "longitude": longitude = try reader.readJSONNumber("longitude, a number")
            default: try reader.skipValue()
            }
        }
        guard let latitude else { throw missing("latitude", in: "\(what): relativeLocation", at: start) }
        guard let longitude else { throw missing("longitude", in: "\(what): relativeLocation", at: start) }
        return Location(latitude: latitude, longitude: longitude)
    }

    private mutating func readFilter(_ index: Int) throws -> PendingFilter {
        let what = "filter \(index)"
        let start = position
        var comparator: QueryComparator?
        var fieldName: String?
        var valueOffset: Int?
        var distanceOffset: Int?
        try readObject(what) { reader, key in
            switch key {
            case "comparator":
                let at = reader.position
                let name = try reader.readString("comparator, a string")
                guard let known = QueryComparator(rawValue: name) else {
                    let supported = QueryComparator.allCases.map(\.rawValue).joined(separator: ", ")
                    throw reader.error("\(what): unknown comparator '\(name)' (supported: \(supported))", at: at)
                }
                comparator = known
            case "fieldName": fieldName = try reader.readString("fieldName, a string")
            case "distance":
                // Read once the comparator is known: only NEAR's counts.
                _ = try reader.peek()
                distanceOffset = reader.position
                try reader.skipValue()
            case "fieldValue":
                _ = try reader.peek()
                valueOffset = reader.position
                try reader.skipValue()
            default: try reader.skipValue()
            }
        }
        guard let comparator else { throw missing("comparator", in: what, at: start) }
        guard let fieldName else { throw missing("fieldName", in: what, at: start) }
        guard let valueOffset else { throw missing("fieldValue", in: what, at: start) }
        var distance: Double?
        if comparator == .near, let distanceOffset {
            let end = position
            seek(to: distanceOffset)
            distance = try skipNull() ? nil : readJSONNumber("\(what): distance, a number")
            seek(to: end)
        }
        return PendingFilter(
            comparator: comparator, fieldName: fieldName, valueOffset: valueOffset, distance: distance)
    }
}
