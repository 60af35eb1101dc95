import CloudCodable
import CloudProtocol

extension NameRules {
    /// The most characters a new container's name may have.
    public static let containerNameLimit = 128

    /// Refuses a name that a new container may not take, with `BAD_REQUEST`
    /// saying the rule: 1 to ``containerNameLimit`` characters of ASCII
    /// letters, digits, `.`, `-` and `_`, the first a letter or a digit
    /// (for example `iCloud.com.example.notes`).
    ///
    /// Container names go into every request's path and into operators'
    /// shell commands, so they keep to characters that need no escaping in
    /// either. Only new containers are held to the rule: a container created
    /// before it keeps working under its name.
    public static func checkNewContainerName(_ name: String) throws(CloudError) {
        try check(name, "the container name")
        let bytes = Array(name.utf8)
        guard let first = bytes.first, isLetterOrDigit(first), bytes.count <= containerNameLimit,
            bytes.allSatisfy({
                isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
            })
        else {
            let shown = bytes.count > containerNameLimit ? "a name of \(bytes.count) bytes" : "'\(name)'"
            throw CloudError(
                .badRequest,
                reason: "\(shown) cannot name a container: a container name is 1 to \(containerNameLimit) characters "
                    + "of ASCII letters, digits, '.', '-' and '_', starting with a letter or a digit "
                    + "(e.g. iCloud.com.example.notes)")
        }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
