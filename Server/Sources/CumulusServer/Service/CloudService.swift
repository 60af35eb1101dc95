import CloudCodable
import CloudProtocol
@_exported import CumulusServerCore
import Foundation
import Logging

/// The record server: the protocol's rules (`RecordService`) over a
/// ``ServerStorage``, plus the accounts that authenticate callers and the
/// notification channels with their long polls.
///
/// ```swift
/// let service = try await CloudService.open(path: "/var/lib/cumulus/cumulus.sqlite", logger: logger)
/// let token = try await service.addContainer(named: "iCloud.com.example.notes")
/// ```
///
/// A request is one storage transaction, answered only after it commits.
public final class CloudService: CloudServing {
    /// Where the service keeps its data.
    public var storage: any ServerStorage { rules.storage }
    /// The largest record accepted, in bytes of its fields on the wire
    /// (`WireFormat.encodedSize(ofFields:)`); a larger one answers `BAD_REQUEST`.
    public var recordSizeLimit: Int { rules.recordSizeLimit }
    /// What tells the other servers on the same storage about this one's
    /// writes, and this one about theirs; `nil` for a lone server.
    public let broadcaster: (any ChangeBroadcasting)?
    /// The protocol's rules, which carry out every request.
    public let rules: RecordService
    /// How many credential changes this service made or heard of (``credentialsVersion()``).
    let credentialChanges = LockedState(UInt64(0))
    /// The watch of a SQLite store for credentials the `cumulus` command
    /// takes away beside the server (see ``watchCredentials(of:)``).
    private let credentialWatch = LockedState<Task<Void, Never>?>(nil)

    /// Creates a service over `storage`.
    ///
    /// - Parameters:
    ///   - recordSizeLimit: The largest record accepted, 1 MB by default.
    ///   - notificationIdleLimit: How long a notification channel that no
    ///     poll uses is kept (10 minutes by default); its client then gets
    ///     `NOT_FOUND` and opens a new one.
    ///   - broadcaster: For one of several servers on one storage: announces
    ///     this service's writes to the others and wakes this service's
    ///     polls for theirs. The service becomes its receiver and closes it.
    ///   - publicURL: The server's public address, the base of share URLs
    ///     (`publicURL/share/<shortGUID>`) and asset URLs; `nil` leaves
    ///     shares without a URL and makes asset URLs paths on the server asked.
    ///   - assetSettings: The size limit and lifetimes of assets.
    ///   - now: The date of record timestamps.
    public init(
        storage: any ServerStorage, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        notificationIdleLimit: Duration = .seconds(600), broadcaster: (any ChangeBroadcasting)? = nil,
        publicURL: String? = nil, assetSettings: AssetSettings = AssetSettings(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.broadcaster = broadcaster
        rules = RecordService(
            storage: storage, recordSizeLimit: recordSizeLimit, channelIdleLimit: notificationIdleLimit,
            publicURL: publicURL, assetSettings: assetSettings, uploadDigest: { CryptoUploadDigest() }, now: now,
            publish: { notice in
                broadcaster?.announce(ChangeAnnouncement(key: notice.key, zoneNames: notice.changedZones))
            })
        // Weak: the broadcaster keeps the receiver, and the service keeps the broadcaster.
        broadcaster?.setReceiver { [weak self] event in await self?.receive(event) }
        if let sqlite = storage as? SQLiteStorage {
            credentialWatch.withLock { $0 = watchCredentials(of: sqlite) }
        }
    }

    /// Reads the store's credentials epoch four times a second (a `PRAGMA`
    /// while nothing else wrote the file) and, when the `cumulus` command
    /// moved it on, has the polls check their channels: a revoked token's
    /// channel ends within a second, not at the client's next request.
    private func watchCredentials(of storage: SQLiteStorage) -> Task<Void, Never> {
        Task { [weak self] in
            var seen: Int64?
            while !Task.isCancelled {
                do { try await Task.sleep(for: .milliseconds(250)) } catch { return }
                guard let self else { return }
                guard let epoch = try? await storage.credentialsEpoch() else { continue }
                if let seen, seen != epoch { self.noteCredentialChange() }
                seen = epoch
            }
        }
    }

    /// Opens (creating if needed) a service on the SQLite file at `path`,
    /// with the bytes of assets in `assetDirectory` (`<path>-assets` by default).
    ///
    /// - Parameters:
    ///   - publicURL: The base of share and asset URLs, if any.
    ///   - assetSettings: The size limit and lifetimes of assets.
    ///   - logger: Where the storage logs.
    public static func open(
        path: String, assetDirectory: String? = nil, recordSizeLimit: Int = RecordEncoder.defaultSizeLimit,
        notificationIdleLimit: Duration = .seconds(600), publicURL: String? = nil,
        assetSettings: AssetSettings = AssetSettings(), logger: Logger
    ) async throws -> CloudService {
        CloudService(
            storage: try await SQLiteStorage(path: path, assetDirectory: assetDirectory, logger: logger),
            recordSizeLimit: recordSizeLimit, notificationIdleLimit: notificationIdleLimit, publicURL: publicURL,
            assetSettings: assetSettings)
    }

    /// Closes the storage and the broadcaster, and ends the notification
    /// polls waiting.
    public func close() async throws {
        credentialWatch.withLock { $0 }?.cancel()
        rules.closeChannels()
        await broadcaster?.close()
        try await storage.close()
    }

    // MARK: Requests

    /// Carries out one request for `caller` by the protocol's rules.
    public func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse {
        try await rules.perform(request, as: caller)
    }

    /// Carries out one request for `caller` and answers it before it is
    /// written: a page of changes keeps the records as storage holds them.
    /// A channel `tokens/create` opens keeps `credential`.
    public func answer(_ request: CloudRequest, as caller: Caller, credential: ChannelCredential?) async throws
        -> ServiceAnswer
    {
        try await rules.answer(request, as: caller, credential: credential?.stored)
    }

    /// ``answer(_:as:credential:)`` for a request that names its writer's
    /// channel (see ``RecordService/answer(_:as:credential:channel:)``).
    public func answer(
        _ request: CloudRequest, as caller: Caller, credential: ChannelCredential?, channel: String?
    ) async throws -> ServiceAnswer {
        try await rules.answer(request, as: caller, credential: credential?.stored, channel: channel)
    }

    // MARK: Assets

    /// Stores the bytes POSTed to an upload URL and answers the asset to save.
    public func receiveAsset<Chunks: AsyncSequence>(ticket: String, contentLength: Int64?, chunks: Chunks)
        async throws -> Asset where Chunks.Element == [UInt8]
    {
        try await rules.receiveAsset(ticket: ticket, contentLength: contentLength, chunks: chunks)
    }

    /// The bytes of a download URL, opened once: all of them or the range
    /// `choosingRange` answers for the asset's size.
    public func openAssetDownload(token: String, choosingRange: (_ assetSize: Int64) throws -> Range<Int64>?)
        async throws -> AssetDownload
    {
        try await rules.openAssetDownload(token: token, choosingRange: choosingRange)
    }

    /// Deletes the assets no one can use any more, expired uploads, and
    /// bytes without a row; safe to run on several servers at once.
    @discardableResult
    public func collectAssets() async throws -> AssetCollection {
        try await rules.collectAssets()
    }

    // MARK: Admin controls

    /// Makes every sync token of a zone of a user's private database
    /// expired. Returns `false` when there is no such zone.
    @discardableResult
    public func expireChangeTokens(
        in zoneID: ZoneID, ownedBy user: String, container: String, environment: CloudEnvironment
    ) async throws -> Bool {
        try await rules.expireChangeTokens(in: zoneID, ownedBy: user, container: container, environment: environment)
    }

    /// Makes every database sync token of a user's private database expired.
    public func expireDatabaseChangeTokens(ownedBy user: String, container: String, environment: CloudEnvironment)
        async throws
    {
        try await rules.expireDatabaseChangeTokens(ownedBy: user, container: container, environment: environment)
    }

    /// Fills (or empties) a user's storage: while full, every record the
    /// user saves answers `QUOTA_EXCEEDED`; deletes still work.
    public func setQuotaExceeded(
        _ exceeded: Bool, forUser user: String, container: String, environment: CloudEnvironment
    ) async throws {
        try await rules.setQuotaExceeded(exceeded, forUser: user, container: container, environment: environment)
    }

    /// Deletes a zone of a user's private database behind the clients'
    /// backs, as another device would.
    @discardableResult
    public func deleteZone(_ zoneID: ZoneID, ownedBy user: String, container: String, environment: CloudEnvironment)
        async throws -> ZoneResult
    {
        try await rules.deleteZone(zoneID, ownedBy: user, container: container, environment: environment)
    }

    /// Copies a container's `development` schema to `production` and
    /// returns how many field types production gained.
    @discardableResult
    public func deploySchema(container: String) async throws -> Int {
        try await rules.deploySchema(container: container)
    }
}
