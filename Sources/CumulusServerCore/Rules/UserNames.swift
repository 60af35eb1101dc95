import CloudCodable
import CloudProtocol

/// The names users show others: what a name may hold, where it comes from,
/// and who sees it. One rule for the in-memory server and the record server.
///
/// A name is ``UserNameComponents``, as the protocol carries it
/// (`nameComponents`). It comes from an identity token's claims at each
/// sign-in (``fromClaims(name:givenName:familyName:)``: cleaned, since a
/// sign-in is not refused for its name) or from the operator
/// (``checked(_:)``: refused when it holds what a name may not). Each part
/// is one line of at most ``maximumLength`` bytes of UTF-8, without control
/// characters or the invisible characters that reorder text.
///
/// Who sees it:
///
/// - user lookups (`users/lookup/email`, `users/lookup/id`,
///   `users/discover`) answer the names of the users they may answer at
///   all: discoverable ones;
/// - a share's owner's name is shown to whoever may read the share: its
///   participants, and anyone holding its URL (the share page, an
///   invitation before accepting);
/// - the names of the participants who joined a share (accepted it, or left
///   after accepting) are shown to its owner and its other participants;
///   a participant who is only invited shows no name, so that inviting a
///   user does not reveal a name that lookups would not.
public enum UserNames {
    /// The most bytes of UTF-8 a part of a name holds: a longer one from an
    /// identity token is cut at a character boundary, one from the operator refused.
    public static let maximumLength = 256

    /// The name an identity token's claims give: `given_name` and
    /// `family_name` when either is there, else `name` whole (as
    /// ``UserNameComponents/givenName``); `nil` when the token carries no
    /// usable name, so that the user keeps the one they had. Each part is
    /// cleaned: line breaks and tabs become spaces, runs of spaces one,
    /// control and bidirectional formatting characters are dropped, the
    /// ends trimmed, and a part longer than ``maximumLength`` cut.
    public static func fromClaims(name: String?, givenName: String?, familyName: String?) -> UserNameComponents? {
        let given = givenName.flatMap(cleaned)
        let family = familyName.flatMap(cleaned)
        if given != nil || family != nil { return UserNameComponents(givenName: given, familyName: family) }
        return name.flatMap(cleaned).map { UserNameComponents(givenName: $0) }
    }

    /// A name given by the operator (or a test), its parts trimmed of
    /// spaces at their ends; `nil` when no part holds anything.
    ///
    /// - Throws: ``CloudError`` (`BAD_REQUEST`) for a part that holds a
    ///   control character (line breaks included) or a bidirectional
    ///   formatting character, or is longer than ``maximumLength``.
    public static func checked(_ name: UserNameComponents?) throws(CloudError) -> UserNameComponents? {
        guard let name else { return nil }
        let given = try checkedPart(name.givenName, "the given name")
        let family = try checkedPart(name.familyName, "the family name")
        guard given != nil || family != nil else { return nil }
        return UserNameComponents(givenName: given, familyName: family)
    }

    private static func checkedPart(_ part: String?, _ what: String) throws(CloudError) -> String? {
        guard let part else { return nil }
        if part.unicodeScalars.contains(where: isForbidden) {
            throw CloudError(
                .badRequest, reason: "\(what) holds a control or bidirectional formatting character")
        }
        let trimmed = trimmingSpaces(part)
        guard trimmed.utf8.count <= maximumLength else {
            throw CloudError(.badRequest, reason: "\(what) is longer than \(maximumLength) bytes of UTF-8")
        }
        return trimmed.isEmpty ? nil : trimmed
    }

    /// A part of a name from a token, cleaned; `nil` when nothing is left.
    static func cleaned(_ text: String) -> String? {
        var scalars = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = !scalars.isEmpty
                continue
            }
            if isForbidden(scalar) { continue }
            if pendingSpace {
                scalars.append(" ")
                pendingSpace = false
            }
            scalars.append(scalar)
        }
        var result = String(scalars)
        if result.utf8.count > maximumLength {
            var cut = ""
            for character in result {
                guard cut.utf8.count + character.utf8.count <= maximumLength else { break }
                cut.append(character)
            }
            result = trimmingSpaces(cut)
        }
        return result.isEmpty ? nil : result
    }

    /// Whether a name may not hold `scalar`: a control character (C0, DEL,
    /// C1), a bidirectional embedding, override or isolate, a directional
    /// mark, the line and paragraph separators, or a byte order mark.
    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF: true
        default: false
        }
    }

    private static func trimmingSpaces(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
