import CloudCodable
import Foundation

// The pieces every body of the protocol shares: objects and arrays walked
// member by member, string lists, error dictionaries and record results.

extension WireBodyReader {
    /// Reads the object at the cursor, calling `member` with each key; it
    /// reads or skips the value.
    package mutating func readObject(_ what: String, _ member: (inout WireBodyReader, String) throws -> Void) throws {
        guard try enterObject("\(what), an object") else { return }
        repeat {
            let key = try readKey()
            try member(&self, key)
        } while try nextMember()
    }

    /// Reads the array at the cursor, calling `element` for each element.
    package mutating func readArray(_ what: String, _ element: (inout WireBodyReader) throws -> Void) throws {
        guard try enterArray("\(what), an array") else { return }
        repeat {
            try element(&self)
        } while try nextElement()
    }

    /// Reads an array of strings.
    package mutating func readStrings(_ what: String) throws -> [String] {
        var strings: [String] = []
        try readArray(what) { reader in strings.append(try reader.readString("a string in '\(what)'")) }
        return strings
    }

    /// Reads an array of strings, or `null` as `nil`.
    package mutating func readOptionalStrings(_ what: String) throws -> [String]? {
        try skipNull() ? nil : readStrings(what)
    }

    /// Reads a string, or `null` as `nil`.
    package mutating func readOptionalString(_ what: String) throws -> String? {
        try skipNull() ? nil : readString(what)
    }

    /// Reads a count that fits `Int` and is not negative (integers as strings too).
    package mutating func readCount(_ what: String) throws -> Int {
        let start = position
        let value = try readInt64(what)
        guard value >= 0, let count = Int(exactly: value) else {
            throw error("\(what) must not be negative, found \(value)", at: start)
        }
        return count
    }

    /// Reads `retryAfter`: seconds, whole or not, exactly to the attosecond
    /// for up to 18 decimals.
    package mutating func readRetryAfter() throws -> Duration {
        let start = position
        let seconds = try readDouble("retryAfter, a number of seconds")
        guard seconds >= 0, seconds < 9e18 else {
            throw error("retryAfter must be a number of seconds from 0 to 9e18, found \(seconds)", at: start)
        }
        let whole = seconds.rounded(.down)
        return .seconds(Int64(whole)) + .nanoseconds(Int64(((seconds - whole) * 1e9).rounded()))
    }
}

/// The members of an error dictionary, gathered while its object is read:
/// `{serverErrorCode, reason, retryAfter?, uuid?, recordName?, zoneID?, serverRecord?}`.
package struct WireErrorMembers {
    package init() {}

    package var code: String?
    package var reason: String?
    package var retryAfter: Duration?
    package var uuid: String?
    package var recordName: String?
    package var zoneID: ZoneID?
    package var serverRecord: Record?

    /// Reads the value of `key` when it is an error member; returns whether it was.
    package mutating func read(_ key: String, _ reader: inout WireBodyReader) throws -> Bool {
        switch key {
        case "serverErrorCode": code = try reader.readString("serverErrorCode, a string")
        case "reason": reason = try reader.readOptionalString("reason, a string")
        case "retryAfter": retryAfter = try reader.skipNull() ? nil : reader.readRetryAfter()
        case "uuid": uuid = try reader.readOptionalString("uuid, a string")
        case "recordName": recordName = try reader.readOptionalString("recordName, a string")
        case "zoneID": zoneID = try reader.skipNull() ? nil : reader.readZoneID()
        case "serverRecord":
            if try !reader.skipNull(), case .record(let record, _) = try reader.readRecord() {
                serverRecord = record
            }
        default: return false
        }
        return true
    }

    /// The error, when the dictionary had a `serverErrorCode`.
    package var error: CloudError? {
        guard let code else { return nil }
        return CloudError(
            CloudError.Code(rawValue: code), reason: reason ?? "", retryAfter: retryAfter, recordName: recordName,
            zoneID: zoneID, serverRecord: serverRecord, uuid: uuid)
    }

    /// Reads the error dictionary at the cursor (unknown members skipped).
    package static func readError(_ reader: inout WireBodyReader, _ what: String) throws -> CloudError {
        let start = reader.position
        var members = WireErrorMembers()
        try reader.readObject(what) { reader, key in
            if try !members.read(key, &reader) { try reader.skipValue() }
        }
        guard let error = members.error else { throw reader.missing("serverErrorCode", in: what, at: start) }
        return error
    }
}

extension JSONWriter {
    /// Appends `["a","b"]`.
    package mutating func appendStrings(_ strings: [String]) {
        append(byte: UInt8(ascii: "["))
        for index in strings.indices {
            if index > 0 { append(byte: UInt8(ascii: ",")) }
            appendString(strings[index])
        }
        append(byte: UInt8(ascii: "]"))
    }

    /// Appends a `Duration` as seconds: an integer when whole, else a decimal.
    package mutating func appendSeconds(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard attoseconds != 0 else {
            appendInt(seconds)
            return
        }
        // Whole nanoseconds (the reader's resolution), written as a decimal.
        let nanoseconds = (Double(attoseconds) / 1e9).rounded()
        appendDouble(Double(seconds) + nanoseconds / 1e9)
    }

    /// Appends the error members after the opening of a dictionary, a comma
    /// first when `afterMember`: code, reason, retryAfter, uuid, then the
    /// record, zone and server record the error is about, when set.
    package mutating func appendErrorMembers(_ error: CloudError, afterMember: Bool) throws {
        if afterMember { append(byte: UInt8(ascii: ",")) }
        appendRaw(#""serverErrorCode":"#)
        appendString(error.code.rawValue)
        appendRaw(#","reason":"#)
        appendString(error.reason)
        if let retryAfter = error.retryAfter {
            appendRaw(#","retryAfter":"#)
            appendSeconds(retryAfter)
        }
        if let uuid = error.uuid {
            appendRaw(#","uuid":"#)
            appendString(uuid)
        }
        if let recordName = error.recordName {
            appendRaw(#","recordName":"#)
            appendString(recordName)
        }
        if let zoneID = error.zoneID {
            appendRaw(#","zoneID":"#)
            appendZoneID(zoneID)
        }
        if let serverRecord = error.serverRecord {
            appendRaw(#","serverRecord":"#)
            try writeRecord(serverRecord)
        }
    }

    /// Appends one entry of a list of records: the record, a deleted
    /// record's entry or an error entry.
    package mutating func appendRecordResult(_ result: RecordResult) throws {
        switch result {
        case .record(let record):
            try writeRecord(record)
        case .deleted(let recordName, let zoneID):
            appendRaw(#"{"recordName":"#)
            appendString(recordName)
            appendRaw(#","deleted":true,"zoneID":"#)
            appendZoneID(zoneID)
            append(byte: UInt8(ascii: "}"))
        case .failure(let error):
            append(byte: UInt8(ascii: "{"))
            try appendErrorMembers(error, afterMember: false)
            append(byte: UInt8(ascii: "}"))
        }
    }
}

/// Runs `body`, turning what it throws into a ``CloudError``: itself when it
/// is one, else `code` with a reason that starts with `context`.
package func withCloudErrors<Result>(_ code: CloudError.Code, _ context: String, _ body: () throws -> Result) throws
    -> Result
{
    do {
        return try body()
    } catch let error as CloudError {
        throw error
    } catch {
        throw CloudError(code, reason: "\(context): \(error)")
    }
}
