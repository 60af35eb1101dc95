/// A ``SyncEngine`` that cannot do what was asked.
public struct SyncEngineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The name of the code.
        public var description: String { name }

        /// The engine was closed with ``SyncEngine/close()``; open a new one on its directory.
        public static let closed = Code("closed")
        /// A ``SyncEngine/sync(_:)`` call reached its ``SyncOptions/timeout``;
        /// the changes stay queued.
        public static let timedOut = Code("timedOut")
        /// A model refers to a record of another zone than the engine's
        /// (a ``Reference`` with another `zoneID`); nothing was queued.
        public static let crossZoneReference = Code("crossZoneReference")
        /// The bytes of an asset are not on this device and no record of the
        /// engine says where to download them, or a file changed after an
        /// asset was made from it.
        public static let assetUnavailable = Code("assetUnavailable")
    }

    /// The kind of failure.
    public var code: Code
    /// What went wrong.
    public var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The code and what went wrong.
    public var description: String { "sync engine \(code): \(message)" }
}
