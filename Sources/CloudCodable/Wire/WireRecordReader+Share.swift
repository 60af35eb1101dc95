extension WireRecordReader {
    /// What a record dictionary says of its parent and share, and a share
    /// record's keys, as they are read.
    struct Relations {
        var parent: String?
        var share: String?
        var details: ShareDetails?

        var isEmpty: Bool { parent == nil && share == nil && details == nil }

        func apply(to record: inout Record) {
            record.parent = parent
            record.share = share
            record.shareDetails = details
        }
    }

    /// Reads the value of one of a record's `parent`, `share` or share keys
    /// into `relations`. A `null` value is the key's absence.
    mutating func readRelation(_ key: WireKey, into relations: inout Relations, depth: Int) throws(WireFormatError) {
        if try scanner.skipNull() { return }
        switch key {
        case .parent:
            // A full reference dictionary is accepted; only its name counts (same zone).
            relations.parent = try context("parent") { (r) throws(WireFormatError) in
                try r.readReference(depth: depth).recordName
            }
        case .share:
            relations.share = try context("share") { (r) throws(WireFormatError) in
                try r.readReference(depth: depth).recordName
            }
        case .shortGUID:
            let guid = try context("shortGUID") { (r) throws(WireFormatError) in try r.scanner.readString() }
            relations.details.edit { $0.shortGUID = guid }
        case .publicPermission:
            let permission = try context("publicPermission") { (r) throws(WireFormatError) in
                try r.readEnum(SharePermission.self, "permission")
            }
            relations.details.edit { $0.publicPermission = permission }
        case .participants:
            let participants = try context("participants") { (r) throws(WireFormatError) in
                try r.readParticipants(depth: depth)
            }
            relations.details.edit { $0.participants = participants }
        case .owner:
            let owner = try context("owner") { (r) throws(WireFormatError) in try r.readParticipant(depth: depth) }
            relations.details.edit { $0.owner = owner }
        case .currentUserParticipant:
            let current = try context("currentUserParticipant") { (r) throws(WireFormatError) in
                try r.readParticipant(depth: depth)
            }
            relations.details.edit { $0.currentUserParticipant = current }
        case .url:
            let url = try context("url") { (r) throws(WireFormatError) in try r.scanner.readString() }
            relations.details.edit { $0.url = url }
        default:
            preconditionFailure("Internal inconsistency: \(key) is not a record relation")
        }
    }

    private mutating func readParticipants(depth: Int) throws(WireFormatError) -> [ShareParticipant] {
        guard try scanner.enterArray("an array of participants") else { return [] }
        var participants: [ShareParticipant] = []
        repeat {
            let index = participants.count
            participants.append(
                try context("participant \(index)") { (r) throws(WireFormatError) in
                    try r.readParticipant(depth: depth + 1)
                })
        } while try scanner.nextElement()
        return participants
    }

    /// Reads `{participantId, userIdentity, type, acceptanceStatus, permission}`;
    /// `permission` is required, a missing `type` is `USER` and a missing
    /// `acceptanceStatus` is `PENDING` (a participant the owner adds).
    private mutating func readParticipant(depth: Int) throws(WireFormatError) -> ShareParticipant {
        _ = try scanner.peek("a participant object")
        let start = scanner.position
        var participant = ShareParticipant(permission: .none)
        var permission: SharePermission?
        if try scanner.enterObject("a participant object") {
            repeat {
                let key = try nextKey { _ in nil }
                switch key {
                case .participantId:
                    participant.participantID = try context("participantId") { (r) throws(WireFormatError) in
                        try r.readOptionalString()
                    }
                case .userIdentity:
                    try context("userIdentity") { (r) throws(WireFormatError) in
                        try r.readUserIdentity(into: &participant, depth: depth + 1)
                    }
                case .type:
                    participant.role = try context("type") { (r) throws(WireFormatError) in
                        try r.readEnum(ShareParticipantRole.self, "participant type")
                    }
                case .acceptanceStatus:
                    participant.acceptanceStatus = try context("acceptanceStatus") { (r) throws(WireFormatError) in
                        try r.readEnum(ShareAcceptanceStatus.self, "acceptance status")
                    }
                case .permission:
                    permission = try context("permission") { (r) throws(WireFormatError) in
                        try r.readEnum(SharePermission.self, "permission")
                    }
                default:
                    try scanner.skipValue(depth: depth + 1)
                }
            } while try scanner.nextMember()
        }
        guard let permission else { throw scanner.error(.missingKey, at: start, "participant has no 'permission'") }
        participant.permission = permission
        return participant
    }

    /// Reads `{userRecordName?, lookupInfo?, nameComponents?}` into `participant`.
    private mutating func readUserIdentity(into participant: inout ShareParticipant, depth: Int)
        throws(WireFormatError)
    {
        if try scanner.skipNull() { return }
        guard try scanner.enterObject("a user identity object") else { return }
        repeat {
            switch try nextKey({ _ in nil }) {
            case .userRecordName:
                participant.userRecordName = try context("userRecordName") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            case .lookupInfo:
                participant.lookupInfo = try context("lookupInfo") { (r) throws(WireFormatError) in
                    try r.readLookupInfo(depth: depth + 1)
                }
            case .nameComponents:
                participant.nameComponents = try context("nameComponents") { (r) throws(WireFormatError) in
                    try r.readNameComponents(depth: depth + 1)
                }
            default:
                try scanner.skipValue(depth: depth + 1)
            }
        } while try scanner.nextMember()
    }

    private mutating func readLookupInfo(depth: Int) throws(WireFormatError) -> UserLookupInfo? {
        if try scanner.skipNull() { return nil }
        var lookup = UserLookupInfo()
        guard try scanner.enterObject("a lookup info object") else { return lookup }
        repeat {
            switch try nextKey({ _ in nil }) {
            case .emailAddress:
                lookup.emailAddress = try context("emailAddress") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            case .phoneNumber:
                lookup.phoneNumber = try context("phoneNumber") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            case .userRecordName:
                lookup.userRecordName = try context("userRecordName") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            default:
                try scanner.skipValue(depth: depth + 1)
            }
        } while try scanner.nextMember()
        return lookup
    }

    private mutating func readNameComponents(depth: Int) throws(WireFormatError) -> UserNameComponents? {
        if try scanner.skipNull() { return nil }
        var name = UserNameComponents()
        guard try scanner.enterObject("a name components object") else { return name }
        repeat {
            switch try nextKey({ _ in nil }) {
            case .givenName:
                name.givenName = try context("givenName") { (r) throws(WireFormatError) in try r.readOptionalString() }
            case .familyName:
                name.familyName = try context("familyName") { (r) throws(WireFormatError) in
                    try r.readOptionalString()
                }
            default:
                try scanner.skipValue(depth: depth + 1)
            }
        } while try scanner.nextMember()
        return name
    }

    /// Reads a string that spells one of `Value`'s cases; any other is an
    /// `.invalidValue` error that lists the spellings.
    private mutating func readEnum<Value: RawRepresentable & CaseIterable>(_: Value.Type, _ what: String)
        throws(WireFormatError) -> Value where Value.RawValue == String
    {
        guard try scanner.peek("a \(what) string") == JSONText.quote else {
            throw scanner.unexpected("a \(what) string")
        }
        let quote = scanner.position
        let text = try scanner.readString()
        if let value = Value(rawValue: text) { return value }
        let known = Value.allCases.map(\.rawValue).joined(separator: ", ")
        throw scanner.error(.invalidValue, at: quote, "unknown \(what) '\(text)' (\(known))")
    }
}

extension Optional where Wrapped == ShareDetails {
    /// Changes the details, starting from empty ones.
    fileprivate mutating func edit(_ change: (inout ShareDetails) -> Void) {
        var details = self ?? ShareDetails()
        change(&details)
        self = details
    }
}
