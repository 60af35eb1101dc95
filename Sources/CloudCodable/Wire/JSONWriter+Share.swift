extension JSONWriter {
    /// Appends a share record's keys after its zone: `shortGUID` and `url`
    /// when set, `publicPermission`, `participants`, and `owner` and
    /// `currentUserParticipant` when set.
    mutating func writeShareDetails(_ details: ShareDetails) {
        if let shortGUID = details.shortGUID {
            put(WireText.shortGUID)
            putString(shortGUID)
        }
        put(WireText.publicPermission)
        putString(details.publicPermission.rawValue)
        put(WireText.participants)
        for index in details.participants.indices {
            if index > 0 { put(UInt8(ascii: ",")) }
            writeParticipant(details.participants[index])
        }
        put(UInt8(ascii: "]"))
        if let owner = details.owner {
            put(WireText.owner)
            writeParticipant(owner)
        }
        if let current = details.currentUserParticipant {
            put(WireText.currentUserParticipant)
            writeParticipant(current)
        }
        if let url = details.url {
            put(WireText.url)
            putString(url)
        }
    }

    /// Appends `{"participantId":…,"userIdentity":{…},"type":…,"acceptanceStatus":…,"permission":…}`,
    /// the optional keys only when set.
    mutating func writeParticipant(_ participant: ShareParticipant) {
        put(UInt8(ascii: "{"))
        if let id = participant.participantID {
            put(#""participantId":"#)
            putString(id)
            put(UInt8(ascii: ","))
        }
        put(#""userIdentity":{"#)
        var first = true
        func key(_ writer: inout JSONWriter, _ text: StaticString) {
            if first { first = false } else { writer.put(UInt8(ascii: ",")) }
            writer.put(text)
        }
        if let user = participant.userRecordName {
            key(&self, #""userRecordName":"#)
            putString(user)
        }
        if let lookup = participant.lookupInfo {
            key(&self, #""lookupInfo":"#)
            writeLookupInfo(lookup)
        }
        if let name = participant.nameComponents {
            key(&self, #""nameComponents":"#)
            writeNameComponents(name)
        }
        put(#"},"type":"#)
        putString(participant.role.rawValue)
        put(#","acceptanceStatus":"#)
        putString(participant.acceptanceStatus.rawValue)
        put(#","permission":"#)
        putString(participant.permission.rawValue)
        put(UInt8(ascii: "}"))
    }

    /// Appends `{"givenName":…,"familyName":…}`, the keys that are set.
    package mutating func writeNameComponents(_ names: UserNameComponents) {
        // Callers outside the record writer may share the buffer; `put` writes in place.
        makeUnique()
        writeOptionalStrings([(#""givenName":"#, names.givenName), (#""familyName":"#, names.familyName)])
    }

    /// Appends `{"emailAddress":…,"phoneNumber":…,"userRecordName":…}`, the keys that are set.
    package mutating func writeLookupInfo(_ lookup: UserLookupInfo) {
        makeUnique()
        writeOptionalStrings([
            (#""emailAddress":"#, lookup.emailAddress), (#""phoneNumber":"#, lookup.phoneNumber),
            (#""userRecordName":"#, lookup.userRecordName),
        ])
    }

    /// Appends an object of the keys whose values are set.
    private mutating func writeOptionalStrings(_ members: [(key: StaticString, value: String?)]) {
        put(UInt8(ascii: "{"))
        var first = true
        for member in members {
            guard let value = member.value else { continue }
            if !first { put(UInt8(ascii: ",")) }
            first = false
            put(member.key)
            putString(value)
        }
        put(UInt8(ascii: "}"))
    }
}
