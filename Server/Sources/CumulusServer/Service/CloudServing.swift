import CloudCodable
import CloudProtocol

/// What the HTTP layer needs of the record service: the protocol's requests
/// carried out for an authenticated caller, the accounts that authenticate
/// callers, and the notification long poll.
///
/// Every method throws ``CloudError`` for what the protocol answers with an
/// error dictionary; anything else it throws is a server failure.
public protocol CloudServing: Sendable {
    /// Carries out one request for `caller`, with the semantics of
    /// `InMemoryCloudServer`.
    func perform(_ request: CloudRequest, as caller: Caller) async throws -> CloudResponse

    /// Carries out one request for `caller`, like ``perform(_:as:)``, and
    /// answers it before it is written (see
    /// ``RecordService/answer(_:as:credential:)``). A channel that
    /// `tokens/create` opens keeps `credential`: its polls end once the
    /// credential no longer holds.
    func answer(_ request: CloudRequest, as caller: Caller, credential: ChannelCredential?) async throws
        -> ServiceAnswer

    /// ``answer(_:as:credential:)`` for a request that names the
    /// notification channel of its writer (``CloudRequest/writingChannelHeader``).
    func answer(_ request: CloudRequest, as caller: Caller, credential: ChannelCredential?, channel: String?)
        async throws -> ServiceAnswer

    /// The types the container's schema gives fields, for decoding fields
    /// sent without `type`.
    func fieldTypes(container: String, environment: CloudEnvironment) async throws -> FieldTypeLookup

    /// Creates a container and returns its API token (64 hexadecimal
    /// characters); only the token's hash is stored.
    func addContainer(named name: String) async throws -> String

    /// Creates a user of a container and returns the user's record name and
    /// web auth token; only the token's hash is stored.
    func addUser(named name: String, container: String) async throws -> (userRecordName: String, webAuthToken: String)

    /// Registers a server-to-server key (a P-256 public key in PEM) and
    /// returns its key ID.
    func addServerKey(container: String, publicKeyPEM: String) async throws -> String

    /// Whether `apiToken` is the container's API token (`false` for an
    /// unknown container).
    func authenticateContainer(named name: String, apiToken: String) async throws -> Bool

    /// The record name of the container's user with this web auth token, or
    /// `nil` for none.
    func user(container: String, webAuthToken: String) async throws -> String?

    /// The PEM public key registered under `keyID` for the container, or `nil`.
    func serverKey(container: String, keyID: String) async throws -> String?

    /// The identity issuers configured for the container (see
    /// ``CloudService/addIdentityIssuer(_:container:)``); none by default.
    func identityIssuers(container: String) async throws -> [StoredIdentityIssuer]

    /// The record name of the user a verified identity token signs in as,
    /// created on first sight (see ``CloudService/signIn(_:container:)``).
    func signIn(_ identity: VerifiedIdentity, container: String) async throws -> String

    /// Whether `apiToken` is one of the container's API tokens, and until when.
    func authenticateAPIToken(_ apiToken: String, container: String) async throws -> CredentialFinding<Void>

    /// The record name of the container's user with this web auth token, and until when it works.
    func authenticateWebAuthToken(_ webAuthToken: String, container: String) async throws
        -> CredentialFinding<String>

    /// A value that changes whenever a credential may have been taken away,
    /// here or through another server or process: what the server found
    /// under one value is trusted only while it stays the same.
    func credentialsVersion() async throws -> CredentialsVersion

    /// A new notification channel for `caller` (the `apnsToken` of
    /// `tokens/create`).
    func createNotificationToken(for caller: Caller) async throws -> String

    /// Waits until the channel has notifications after `cursor` (from the
    /// channel's creation when `nil`) or `timeout` passes, and returns them with the next
    /// cursor. An unknown token throws `NOT_FOUND`.
    func pollNotifications(token: String, cursor: String?, timeout: Duration) async throws -> NotificationBatch

    /// What the page at a share's URL shows (its title and owner), or `nil`
    /// when no share has this shortGUID.
    func sharePreview(shortGUID: String) async throws -> SharePreview?

    /// Stores the bytes POSTed to an upload URL, read from `chunks` as they
    /// arrive, and answers the asset to save (see ``RecordService/receiveAsset(ticket:contentLength:chunks:)``).
    func receiveAsset<Chunks: AsyncSequence>(ticket: String, contentLength: Int64?, chunks: Chunks)
        async throws -> Asset where Chunks.Element == [UInt8]

    /// The bytes of a download URL, opened once: all of them or the range
    /// `choosingRange` answers for the asset's size (see
    /// ``RecordService/openAssetDownload(token:choosingRange:)``).
    func openAssetDownload(token: String, choosingRange: (_ assetSize: Int64) throws -> Range<Int64>?)
        async throws -> AssetDownload

    /// Deletes the assets no one can use any more (see ``RecordService/collectAssets()``).
    @discardableResult
    func collectAssets() async throws -> AssetCollection

    /// Tells the service the address the server listens on, once bound:
    /// the base of its URLs when no public URL is configured (see
    /// ``RecordService/useListeningAddress(_:)``).
    func useListeningAddress(_ url: String)

    /// `path` on the service's base URL (see ``RecordService/absoluteURL(_:)``).
    func absoluteURL(_ path: String) -> String
}

extension CloudServing {
    /// Throws `UNSUPPORTED`: a service without assets.
    public func receiveAsset<Chunks: AsyncSequence>(ticket: String, contentLength: Int64?, chunks: Chunks)
        async throws -> Asset where Chunks.Element == [UInt8]
    {
        throw CloudError(.unsupported, reason: "\(Self.self) keeps no assets")
    }

    /// Throws `UNSUPPORTED`: a service without assets.
    public func openAssetDownload(token: String, choosingRange: (_ assetSize: Int64) throws -> Range<Int64>?)
        async throws -> AssetDownload
    {
        throw CloudError(.unsupported, reason: "\(Self.self) keeps no assets")
    }

    /// The bytes of a download URL, all of them or `range`.
    public func openAssetDownload(token: String, range: Range<Int64>?) async throws -> AssetDownload {
        try await openAssetDownload(token: token) { _ in range }
    }

    /// Collects nothing: a service without assets.
    @discardableResult
    public func collectAssets() async throws -> AssetCollection { AssetCollection() }

    /// Keeps nothing: a service that makes no URLs.
    public func useListeningAddress(_ url: String) {}

    /// The path alone: a service that makes no URLs.
    public func absoluteURL(_ path: String) -> String { path }

    /// The response of ``perform(_:as:)``, for a service that answers
    /// nothing before it is written.
    public func answer(_ request: CloudRequest, as caller: Caller, credential: ChannelCredential?) async throws
        -> ServiceAnswer
    {
        ServiceAnswer(try await perform(request, as: caller))
    }

    /// ``answer(_:as:credential:)``: a service that leaves no write out of
    /// any channel's polls.
    public func answer(
        _ request: CloudRequest, as caller: Caller, credential: ChannelCredential?, channel: String?
    ) async throws -> ServiceAnswer {
        try await answer(request, as: caller, credential: credential)
    }

    /// ``answer(_:as:credential:)`` for a request whose credential a
    /// channel need not keep.
    public func answer(_ request: CloudRequest, as caller: Caller) async throws -> ServiceAnswer {
        try await answer(request, as: caller, credential: nil)
    }
}
