import CloudCodable

// The pieces of user lookup's and sharing's bodies that both ends write or
// read: lookup info, name components, user identities and the spellings of
// the sharing enums.

extension JSONWriter {
    /// Appends a user identity dictionary:
    /// `{"userRecordName":…,"lookupInfo":…,"nameComponents":…}`, the last two when set.
    package mutating func appendUserIdentity(_ user: UserIdentity) {
        appendRaw(#"{"userRecordName":"#)
        appendString(user.userRecordName)
        if let info = user.lookupInfo {
            appendRaw(#","lookupInfo":"#)
            writeLookupInfo(info)
        }
        if let names = user.nameComponents {
            appendRaw(#","nameComponents":"#)
            writeNameComponents(names)
        }
        append(byte: UInt8(ascii: "}"))
    }
}

extension WireBodyReader {
    /// Reads a lookup info dictionary; its members may each be missing or `null`.
    package mutating func readLookupInfo(_ what: String) throws -> UserLookupInfo {
        var info = UserLookupInfo()
        try readObject(what) { reader, key in
            switch key {
            case "emailAddress": info.emailAddress = try reader.readOptionalString("emailAddress, a string")
            case "phoneNumber": info.phoneNumber = try reader.readOptionalString("phoneNumber, a string")
            case "userRecordName": info.userRecordName = try reader.readOptionalString("userRecordName, a string")
            default: try reader.skipValue()
            }
        }
        return info
    }

    /// Reads a name components dictionary; its members may each be missing or `null`.
    package mutating func readNameComponents(_ what: String) throws -> UserNameComponents {
        var names = UserNameComponents()
        try readObject(what) { reader, key in
            switch key {
            case "givenName": names.givenName = try reader.readOptionalString("givenName, a string")
            case "familyName": names.familyName = try reader.readOptionalString("familyName, a string")
            default: try reader.skipValue()
            }
        }
        return names
    }

    /// Reads a user identity dictionary, which must name the user.
    package mutating func readUserIdentity(_ what: String) throws -> UserIdentity {
        let start = position
        var name: String?
        var info: UserLookupInfo?
        var names: UserNameComponents?
        try readObject(what) { reader, key in
            switch key {
            case "userRecordName": name = try reader.readString("userRecordName, a string")
            case "lookupInfo": info = try reader.skipNull() ? nil : reader.readLookupInfo("lookupInfo of \(what)")
            case "nameComponents":
                names = try reader.skipNull() ? nil : reader.readNameComponents("nameComponents of \(what)")
            default: try reader.skipValue()
            }
        }
        guard let name else { throw missing("userRecordName", in: what, at: start) }
        return UserIdentity(userRecordName: name, lookupInfo: info, nameComponents: names)
    }

    /// Reads one of the wire's spellings of `Value`, naming them all when
    /// the string is none of them.
    package mutating func readSpelling<Value: RawRepresentable & CaseIterable>(
        _ key: String, in what: String, as _: Value.Type = Value.self
    ) throws -> Value where Value.RawValue == String {
        let start = position
        let text = try readString("\(key), a string")
        guard let value = Value(rawValue: text) else {
            let known = Value.allCases.map(\.rawValue).joined(separator: ", ")
            throw error("\(what): unknown \(key) '\(text)' (\(known))", at: start)
        }
        return value
    }
}

extension DatabaseScope {
    /// The database's name in an answer's `databaseScope`: `PUBLIC`,
    /// `PRIVATE` or `SHARED`, where paths spell it in lower case.
    package var wireName: String { rawValue.uppercased() }

    /// The database a `databaseScope` names, or `nil`.
    package init?(wireName: String) {
        guard let scope = Self.allCases.first(where: { $0.wireName == wireName }) else { return nil }
        self = scope
    }
}
