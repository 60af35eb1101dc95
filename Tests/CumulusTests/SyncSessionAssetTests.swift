import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A model with an asset and a list of them.
struct Scrapbook: CloudCodable, Identifiable, Hashable {
    var id: String
    var title: String
    var cover: CloudAsset
    var pages: [CloudAsset] = []
    var cloudMetadata: RecordMetadata?
}

/// The session's decisions about assets, as a plain value: which bytes go
/// up when, what a receipt changes, what a failure does. No tasks, no
/// clocks, no server, no files.
@Suite("SyncSession assets")
struct SyncSessionAssetTests {
    typealias Session = SyncSession<Scrapbook>
    typealias Action = Session.Action

    let zone = ZoneID(zoneName: "Scrapbook")
    let alice = AccountCheck(user: UserIdentity(userRecordName: "_alice"), generation: 1)
    let offline = CloudError(.networkFailure, reason: "offline")

    func asset(_ seed: UInt64) -> CloudAsset { CloudAsset(data: assetBytes(64, seed: seed)) }

    func file(_ asset: CloudAsset) -> URL { URL(fileURLWithPath: "/assets/\(AssetStore.key(asset.checksum))") }

    func target(_ index: Int) -> AssetUploadTarget {
        AssetUploadTarget(recordName: "r", fieldName: "f", url: "/upload/\(index)")
    }

    func uploaded(_ asset: CloudAsset, receipt: String) -> Asset {
        Asset(fileChecksum: asset.checksum, size: asset.size, receipt: receipt)
    }

    func settings(deltas: Bool = true) -> Replica<Scrapbook>.Settings {
        var settings = Replica<Scrapbook>.Settings(
            zoneID: zone, encoder: RecordEncoder(zoneID: zone), maximumConflictAttempts: 5, earlierVersionLimit: 4,
            random: { 0.5 })
        settings.sendsFieldDeltas = deltas
        return settings
    }

    func sessionSettings() -> Session.Settings {
        let policy = RetryPolicy(
            initialDelay: .seconds(1), maximumDelay: .seconds(8), multiplier: 2, jitter: 0, maximumAttempts: 4)
        return Session.Settings(batchSize: 100, fetchResultsLimit: nil, retryPolicy: policy, random: { 0.5 })
    }

    /// The server's record of `book` at change tag `tag`.
    func stored(_ book: Scrapbook, tag: String) throws -> Record {
        var record = try RecordEncoder(zoneID: zone).encode(book)
        record.metadata = RecordMetadata(changeTag: tag, zoneID: zone)
        return record
    }

    /// A session of alice's ready zone, with `server` held at change tag
    /// "1" and `pending` queued; `journal` gets every write.
    func session(
        pending: [Scrapbook], server: [Scrapbook] = [], deltas: Bool = true, journal: inout Documents
    ) throws -> Session {
        var replica = Replica<Scrapbook>(settings: settings(deltas: deltas))
        var effects = ReplicaEffects<Scrapbook>()
        for book in server { try replica.setServer(book.id, stored(book, tag: "1"), &effects) }
        journal.apply(effects)
        journal.apply(
            replica.updateMeta {
                $0.user = "_alice"
                $0.zoneReady = true
            })
        journal.apply(replica.upload(try replica.prepare(pending)))
        return Session(replica: replica, settings: sessionSettings())
    }

    func session(pending: [Scrapbook], server: [Scrapbook] = [], deltas: Bool = true) throws -> Session {
        var journal = Documents()
        return try session(pending: pending, server: server, deltas: deltas, journal: &journal)
    }

    /// The journal's documents, as the engine would find them on opening.
    struct Documents {
        var documents: [String: [UInt8]] = [:]

        mutating func apply(_ effects: ReplicaEffects<Scrapbook>) {
            for (key, value) in effects.journal.changes { documents[key] = value }
        }

        mutating func apply(_ actions: [Action]) {
            for action in actions {
                switch action {
                case .persist(let effects), .persistBehind(let effects): apply(effects)
                default: continue
                }
            }
        }
    }

    // MARK: Reading actions

    func assetFilesSought(_ actions: [Action]) -> [String]? {
        if case .findAssetFiles(let checksums)? = actions.last { return checksums }
        return nil
    }

    func uploadRequests(_ actions: [Action]) -> [AssetUploadRequest]? {
        if case .requestAssetUploads(let requests)? = actions.last { return requests }
        return nil
    }

    func assetUpload(_ actions: [Action]) -> (file: URL, target: AssetUploadTarget)? {
        if case .uploadAsset(let file, let target)? = actions.last { return (file, target) }
        return nil
    }

    func sentOperations(_ actions: [Action]) -> [RecordOperation]? {
        if case .send(let operations)? = actions.last { return operations }
        return nil
    }

    func waited(_ actions: [Action]) -> Duration? {
        if case .wait(let delay)? = actions.last { return delay }
        return nil
    }

    func finished(_ actions: [Action]) -> CloudError?? {
        if case .finish(let error)? = actions.last { return .some(error) }
        return nil
    }

    /// The failure a retry was scheduled for.
    func retried(_ actions: [Action]) -> CloudError? {
        for action in actions {
            if case .publish(.retryScheduled(_, let error)) = action { return error }
        }
        return nil
    }

    /// The receipts of an operation's assets, field by field.
    func receipts(_ operation: RecordOperation) -> [String: [String?]] {
        var receipts: [String: [String?]] = [:]
        for value in operation.record.fields.assetValues {
            receipts[value.field, default: []].append(value.asset.receipt)
        }
        return receipts
    }

    /// The server's answer to a save: the record stored at change tag `tag`.
    func acknowledged(_ operation: RecordOperation, tag: String = "2") -> RecordResult {
        var record = operation.record
        record.metadata = RecordMetadata(changeTag: tag, zoneID: zone)
        return .record(record)
    }

    /// Starts a run that only sends, up to its first request after the account check.
    func startSending(_ session: inout Session) -> [Action] {
        _ = session.start(fetching: false)
        return session.handle(.accountChecked(.success(alice)))
    }

    /// Uploads every asset the last actions look for, in order, with
    /// receipts `r1`, `r2`, …, and returns the actions that follow.
    func uploadAll(_ session: inout Session, _ actions: [Action], assets: [CloudAsset]) throws -> [Action] {
        let checksums = try #require(assetFilesSought(actions))
        var files: [String: URL] = [:]
        for asset in assets where checksums.contains(asset.checksum) { files[asset.checksum] = file(asset) }
        var actions = session.handle(.assetFilesFound(files))
        let requests = try #require(uploadRequests(actions))
        actions = session.handle(.assetUploadsRequested(.success(requests.indices.map(target))))
        var count = 0
        while let upload = assetUpload(actions) {
            count += 1
            let asset = try #require(assets.first { file($0) == upload.file })
            actions = session.handle(.assetUploaded(.success(uploaded(asset, receipt: "r\(count)"))))
        }
        return actions
    }

    // MARK: Which assets go up, and when

    @Test("a new asset's bytes go up before its save, which carries the receipts; the answer forgets them")
    func uploadThenSave() throws {
        let (cover, first, second) = (asset(1), asset(2), asset(3))
        var session = try session(pending: [Scrapbook(id: "a", title: "t", cover: cover, pages: [first, second])])
        var actions = startSending(&session)
        #expect(actions.contains { if case .retireAssetCopies = $0 { true } else { false } })
        #expect(assetFilesSought(actions) == [cover.checksum, first.checksum, second.checksum])

        actions = session.handle(
            .assetFilesFound([cover.checksum: file(cover), first.checksum: file(first), second.checksum: file(second)]))
        #expect(
            uploadRequests(actions) == [
                AssetUploadRequest(recordName: "a", recordType: "Scrapbook", fieldName: "cover"),
                AssetUploadRequest(recordName: "a", recordType: "Scrapbook", fieldName: "pages"),
                AssetUploadRequest(recordName: "a", recordType: "Scrapbook", fieldName: "pages"),
            ])
        actions = session.handle(.assetUploadsRequested(.success([target(0), target(1), target(2)])))
        #expect(assetUpload(actions)?.file == file(cover))
        #expect(assetUpload(actions)?.target == target(0))
        actions = session.handle(.assetUploaded(.success(uploaded(cover, receipt: "r1"))))
        #expect(assetUpload(actions)?.file == file(first))
        actions = session.handle(.assetUploaded(.success(uploaded(first, receipt: "r2"))))
        #expect(assetUpload(actions)?.target == target(2))
        actions = session.handle(.assetUploaded(.success(uploaded(second, receipt: "r3"))))
        let operations = try #require(sentOperations(actions))
        #expect(operations.count == 1)
        #expect(receipts(operations[0]) == ["cover": ["r1"], "pages": ["r2", "r3"]])
        #expect(session.assetReceipts.count == 3, "kept until the save is answered")
        guard case .save(let queued)? = session.replica.pending["a"]?.kind else {
            Issue.record("the save is not pending")
            return
        }
        #expect(queued.fields.assetValues.allSatisfy { $0.asset.receipt == nil }, "only the request carries receipts")

        actions = session.handle(.sent(.success([acknowledged(operations[0])])))
        #expect(session.assetReceipts.isEmpty)
        #expect(session.replica.pending.isEmpty)
        #expect(finished(actions) == .some(nil))
    }

    @Test("a batch without assets, or with deletions only, goes at once")
    func noAssets() throws {
        var session = try session(pending: [], server: [Scrapbook(id: "a", title: "t", cover: asset(1))])
        _ = session.replica.delete(["a"])
        let actions = startSending(&session)
        #expect(sentOperations(actions)?.map(\.type) == [.delete])
    }

    @Test("an asset the server holds in that field is not uploaded again; the same bytes in another field are")
    func heldAssets() throws {
        let (cover, page) = (asset(1), asset(2))
        var book = Scrapbook(
            id: "a", title: "t", cover: cover, cloudMetadata: RecordMetadata(changeTag: "1", zoneID: zone))
        let server = book
        // An edit of the title, sent whole (no field deltas): the cover is the server's already.
        book.title = "new"
        var session = try session(pending: [book], server: [server], deltas: false)
        var actions = startSending(&session)
        var operations = try #require(sentOperations(actions), "no upload: \(actions)")
        #expect(receipts(operations[0]) == ["cover": [nil]], "the checksum alone")

        // The cover's bytes as a page too: the server holds them for the cover only.
        book.title = "t"
        book.pages = [cover, page]
        session = try self.session(pending: [book], server: [server], deltas: false)
        actions = startSending(&session)
        #expect(assetFilesSought(actions) == [cover.checksum, page.checksum])
        actions = session.handle(.assetFilesFound([cover.checksum: file(cover), page.checksum: file(page)]))
        #expect(uploadRequests(actions)?.map(\.fieldName) == ["pages", "pages"])
        actions = session.handle(.assetUploadsRequested(.success([target(0), target(1)])))
        actions = session.handle(.assetUploaded(.success(uploaded(cover, receipt: "r1"))))
        actions = session.handle(.assetUploaded(.success(uploaded(page, receipt: "r2"))))
        operations = try #require(sentOperations(actions))
        #expect(receipts(operations[0]) == ["cover": [nil], "pages": ["r1", "r2"]])
    }

    @Test("without the bytes on this device, the save goes with the checksum alone")
    func noLocalBytes() throws {
        let (cover, page) = (asset(1), asset(2))
        var session = try session(pending: [Scrapbook(id: "a", title: "t", cover: cover, pages: [page])])
        var actions = startSending(&session)
        actions = session.handle(.assetFilesFound([:]))
        var operations = try #require(sentOperations(actions), "no upload is asked for: \(actions)")
        #expect(receipts(operations[0]) == ["cover": [nil], "pages": [nil]])

        // Only the bytes found go up.
        session = try self.session(pending: [Scrapbook(id: "a", title: "t", cover: cover, pages: [page])])
        actions = startSending(&session)
        actions = session.handle(.assetFilesFound([page.checksum: file(page)]))
        #expect(uploadRequests(actions)?.map(\.fieldName) == ["pages"])
        actions = session.handle(.assetUploadsRequested(.success([target(0)])))
        actions = session.handle(.assetUploaded(.success(uploaded(page, receipt: "r1"))))
        operations = try #require(sentOperations(actions))
        #expect(receipts(operations[0]) == ["cover": [nil], "pages": ["r1"]])
    }

    // MARK: Receipts

    @Test("a save in doubt goes again with the same receipt, and so does one to merge; an answer for good forgets it")
    func receiptsOfSavesInDoubt() throws {
        let cover = asset(1)
        var session = try session(pending: [Scrapbook(id: "a", title: "t", cover: cover)])
        var actions = startSending(&session)
        actions = try uploadAll(&session, actions, assets: [cover])
        #expect(sentOperations(actions) != nil)

        // The answer is lost: the next attempt sends the same receipt, without an upload.
        actions = session.handle(.sent(.failure(offline)))
        #expect(waited(actions) == .seconds(1))
        _ = session.handle(.woke)
        actions = session.handle(.accountChecked(.success(alice)))
        var operations = try #require(sentOperations(actions), "no upload: \(actions)")
        #expect(receipts(operations[0]) == ["cover": ["r1"]])

        // A record's transient failure keeps it too.
        actions = session.handle(.sent(.success([.failure(CloudError(.tryAgainLater, reason: "busy"))])))
        _ = session.handle(.woke)
        actions = session.handle(.accountChecked(.success(alice)))
        operations = try #require(sentOperations(actions))
        #expect(receipts(operations[0]) == ["cover": ["r1"]])

        // A conflict keeps it for the merge's save.
        let merging = session
        actions = session.handle(.sent(.success([.failure(CloudError(.conflict, reason: "changed"))])))
        guard case .lookUp("a")? = actions.last else {
            Issue.record("the server's record is not looked up: \(actions)")
            return
        }
        #expect(session.assetReceipts.count == 1)

        // A refusal for good forgets it.
        session = merging
        let refusal = CloudError(.badRequest, reason: "field 'cover' is not in the schema")
        actions = session.handle(.sent(.success([.failure(refusal)])))
        #expect(session.assetReceipts.isEmpty)
        #expect(session.replica.refused["a"]?.reason == refusal.reason)
        #expect(finished(actions) == .some(nil))
    }

    @Test("a receipt the server refuses is dropped, and the next attempt uploads the bytes again")
    func refusedReceipt() throws {
        let cover = asset(1)
        var session = try session(pending: [Scrapbook(id: "a", title: "t", cover: cover)])
        var actions = startSending(&session)
        actions = try uploadAll(&session, actions, assets: [cover])
        let expired = CloudError(
            .badRequest, reason: "field 'cover': the asset's receipt has expired; upload the file again",
            recordName: "a")
        actions = session.handle(.sent(.success([.failure(expired)])))
        #expect(session.assetReceipts.isEmpty)
        #expect(session.replica.refused["a"] == nil, "not a refusal of the save")
        #expect(waited(actions) == .seconds(1))
        #expect(retried(actions)?.code == .tryAgainLater)
        _ = session.handle(.woke)
        actions = session.handle(.accountChecked(.success(alice)))
        #expect(assetFilesSought(actions) == [cover.checksum])
    }

    // MARK: Failures

    @Test("an asset refused for good (over the size limit) fails its save alone; the others go")
    func assetRefusedForGood() throws {
        let (large, small) = (asset(1), asset(2))
        var session = try session(pending: [
            Scrapbook(id: "a", title: "t", cover: large), Scrapbook(id: "b", title: "t", cover: small),
        ])
        var actions = startSending(&session)
        actions = session.handle(.assetFilesFound([large.checksum: file(large), small.checksum: file(small)]))
        actions = session.handle(.assetUploadsRequested(.success([target(0), target(1)])))
        let tooLarge = CloudError(.limitExceeded, reason: "the asset is larger than 1000 bytes")
        actions = session.handle(.assetUploaded(.failure(tooLarge)))
        #expect(assetUpload(actions)?.file == file(small))
        actions = session.handle(.assetUploaded(.success(uploaded(small, receipt: "r1"))))
        let operations = try #require(sentOperations(actions))
        #expect(operations.map(\.record.recordName) == ["b"])

        actions = session.handle(.sent(.success([acknowledged(operations[0])])))
        #expect(session.replica.refused["a"]?.code == .limitExceeded)
        #expect(session.replica.refused["a"]?.recordName == "a")
        #expect(session.replica.pending.keys.sorted() == ["a"])
        let failed = actions.flatMap { action -> [SyncEvent] in
            if case .persist(let effects) = action { return effects.events }
            return []
        }
        #expect(failed.contains { if case .recordFailed("a", _) = $0 { true } else { false } })
        #expect(finished(actions) == .some(nil))
    }

    @Test("uploads refused for good as a whole fail the saves that need them; with none left nothing is sent")
    func uploadsRefusedForGood() throws {
        let cover = asset(1)
        var session = try session(pending: [Scrapbook(id: "a", title: "t", cover: cover)])
        var actions = startSending(&session)
        actions = session.handle(.assetFilesFound([cover.checksum: file(cover)]))
        actions = session.handle(.assetUploadsRequested(.failure(CloudError(.accessDenied, reason: "read only"))))
        #expect(!actions.contains { if case .send = $0 { true } else { false } })
        #expect(session.replica.refused["a"]?.code == .accessDenied)
        #expect(finished(actions) == .some(nil))
    }

    @Test("a transient failure of an upload fails the batch; the receipts of the uploads made stay")
    func transientUploadFailure() throws {
        let (one, two) = (asset(1), asset(2))
        var session = try session(pending: [
            Scrapbook(id: "a", title: "t", cover: one), Scrapbook(id: "b", title: "t", cover: two),
        ])
        var actions = startSending(&session)
        actions = session.handle(.assetFilesFound([one.checksum: file(one), two.checksum: file(two)]))
        actions = session.handle(.assetUploadsRequested(.success([target(0), target(1)])))
        actions = session.handle(.assetUploaded(.success(uploaded(one, receipt: "r1"))))
        actions = session.handle(.assetUploaded(.failure(offline)))
        #expect(waited(actions) == .seconds(1))
        #expect(session.replica.refused.isEmpty)

        _ = session.handle(.woke)
        actions = session.handle(.accountChecked(.success(alice)))
        #expect(assetFilesSought(actions) == [two.checksum], "the first is not uploaded again")
        actions = try uploadAll(&session, actions, assets: [two])
        let operations = try #require(sentOperations(actions))
        #expect(operations.map(receipts) == [["cover": ["r1"]], ["cover": ["r1"]]])
    }

    @Test("an expired upload URL, an unreadable file, a short or receiptless answer: the batch tries again")
    func batchFailures() throws {
        let cover = asset(1)
        func uploading() throws -> Session {
            var session = try self.session(pending: [Scrapbook(id: "a", title: "t", cover: cover)])
            _ = startSending(&session)
            _ = session.handle(.assetFilesFound([cover.checksum: file(cover)]))
            return session
        }
        // The URL expired before the bytes went: the next attempt asks for another.
        var session = try uploading()
        _ = session.handle(.assetUploadsRequested(.success([target(0)])))
        var actions = session.handle(.assetUploaded(.failure(CloudError(.expired, reason: "the URL expired"))))
        #expect(waited(actions) == .seconds(1))
        #expect(retried(actions)?.code == .tryAgainLater)
        #expect(retried(actions)?.recordName == "a")

        session = try uploading()
        _ = session.handle(.assetUploadsRequested(.success([target(0)])))
        actions = session.handle(.assetFileUnreadable("no such file"))
        #expect(waited(actions) == .seconds(1))
        #expect(retried(actions)?.reason.contains("no such file") == true)

        session = try uploading()
        actions = session.handle(.assetUploadsRequested(.success([])))
        #expect(retried(actions)?.reason == "assets/upload answered 0 of 1 URLs")

        session = try uploading()
        _ = session.handle(.assetUploadsRequested(.success([target(0)])))
        actions = session.handle(.assetUploaded(.success(Asset(fileChecksum: cover.checksum))))
        #expect(retried(actions)?.reason == "an asset upload answered no receipt")

        session = try uploading()
        actions = session.handle(.assetUploadsRequested(.failure(offline)))
        #expect(retried(actions) == offline)
        #expect(session.replica.refused.isEmpty)
    }

    // MARK: Restarts

    @Test("after a restart from the journal the receipts are gone: the bytes go up again, or the checksum alone")
    func restart() async throws {
        let cover = asset(1)
        var journal = Documents()
        var session = try session(pending: [Scrapbook(id: "a", title: "t", cover: cover)], journal: &journal)
        var actions = startSending(&session)
        journal.apply(actions)
        actions = try uploadAll(&session, actions, assets: [cover])
        journal.apply(actions)
        #expect(sentOperations(actions) != nil)
        // The process dies with the save in doubt.

        let replica = try await Replica<Scrapbook>.load(journal.documents, settings: settings())
        #expect(replica.inDoubt["a"]?.count == 1)
        var restarted = Session(replica: replica, settings: sessionSettings())
        #expect(restarted.assetReceipts.isEmpty)
        actions = startSending(&restarted)
        #expect(assetFilesSought(actions) == [cover.checksum])
        actions = try uploadAll(&restarted, actions, assets: [cover])
        #expect(sentOperations(actions).map { $0.map(receipts) } == [["cover": ["r1"]]])

        // The copy did not survive: the checksum goes alone, which the server
        // takes if the save in doubt arrived.
        restarted = Session(replica: replica, settings: sessionSettings())
        actions = startSending(&restarted)
        actions = restarted.handle(.assetFilesFound([:]))
        #expect(sentOperations(actions).map { $0.map(receipts) } == [["cover": [nil]]])
    }
}
