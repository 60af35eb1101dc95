import Foundation

/// A journal that cannot be opened or written.
///
/// Opening never changes damaged files: the error says which file and line
/// are wrong so that a person can look, and the engine refuses to start
/// rather than lose or invent data.
public struct JournalError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The name of the code.
        public var description: String { name }

        /// A file is not what the journal writes: damage other than a torn last entry.
        public static let corrupted = Code("corrupted")
        /// The journal was written by a newer format version.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// Reading or writing a file failed.
        public static let io = Code("io")
        /// The journal was closed, by its owner or after an earlier write failed.
        public static let closed = Code("closed")
        /// Another open journal holds the directory: one of another process,
        /// or one of this process that did not let go within 5 seconds. The
        /// lock is advisory (`flock`) and the system releases it when the
        /// process holding it dies, so a crash never leaves a directory in
        /// use: this error always means a live owner.
        public static let inUse = Code("inUse")
    }

    /// The kind of failure.
    public var code: Code
    /// The file concerned.
    public var file: String?
    /// The line of the file (counting from 1), for damage.
    public var line: Int?
    /// What is wrong.
    public var message: String

    init(_ code: Code, file: String? = nil, line: Int? = nil, _ message: String) {
        self.code = code
        self.file = file
        self.line = line
        self.message = message
    }

    /// A sentence naming the file, the line and what is wrong.
    public var description: String {
        var place = ""
        if let file { place = " in \(file)" + (line.map { " line \($0)" } ?? "") }
        return "journal \(code)\(place): \(message)"
    }
}
