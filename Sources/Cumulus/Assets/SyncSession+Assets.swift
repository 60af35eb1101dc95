import CloudCodable
import CloudProtocol
import Foundation

/// Where the engine decides to upload an asset: before a batch of saves
/// leaves, the bytes of the assets its saves hold that the server does not
/// (`assets/upload`, then each file), then the saves with the uploads'
/// receipts.
///
/// A save whose assets cannot be uploaded for good fails alone; a
/// transient failure fails the whole batch, which is sent again (an upload
/// whose answer was lost is made again, and the server collects the unused
/// one). A receipt stays in ``SyncSession/assetReceipts`` until its save is
/// answered, so that a save in doubt is sent again with the same one; a
/// receipt the server refuses (expired) is dropped, and the asset uploaded
/// again on the next attempt. Receipts are not journalled: after a restart
/// the bytes go up again, or, where this device no longer has them, the
/// save goes with the checksum alone.
extension SyncSession {
    /// One asset value of a save that the server does not hold in that
    /// field yet: its bytes go first, and the save carries the receipt.
    struct AssetUpload: Sendable, Equatable {
        /// The save's place in its batch.
        var operation: Int
        var field: String
        /// The value's place in an `ASSETID_LIST`; `nil` for an `ASSETID`.
        var position: Int?
        var checksum: String
        /// The file of the bytes on this device, once found.
        var file: URL?
    }

    /// Identifies an upload's receipt: the server takes it only in the
    /// record and field it was asked for.
    struct ReceiptKey: Sendable, Hashable {
        var recordName: String
        var field: String
        var checksum: String
    }

    /// A batch on its way to `records/modify`, with its assets' uploads.
    struct OutgoingBatch: Sendable {
        var changes: [Replica<Model>.SentChange]
        /// The batch's operations, their assets with the receipts known so far.
        var operations: [RecordOperation]
        /// The assets whose bytes go up before the saves, in order.
        var uploads: [AssetUpload] = []
        /// Where each upload's bytes go, once the server answered.
        var targets: [AssetUploadTarget] = []
        /// The upload under way.
        var next = 0
        /// Saves refused for good on the way: not sent, answered with the refusal.
        var refusals: [Int: CloudError] = [:]
        /// The saves that carry receipts, which their answers settle.
        var carryingReceipts: Set<Int> = []

        init(_ changes: [Replica<Model>.SentChange]) {
            self.changes = changes
            operations = changes.map(\.operation)
        }

        /// The operations that go to the server: those not refused.
        var sent: [Int] { operations.indices.filter { refusals[$0] == nil } }

        mutating func refuse(_ operation: Int, _ error: CloudError) {
            var refusal = error
            refusal.recordName = refusal.recordName ?? operations[operation].record.recordName
            refusals[operation] = refusal
        }
    }

    // MARK: Planning

    /// Starts sending a batch: the receipts known go into its saves, and
    /// the bytes of the other assets the server does not hold in their
    /// fields go up first, if this device has them.
    mutating func sendWithAssets(_ changes: [Replica<Model>.SentChange]) -> [Action] {
        var outgoing = OutgoingBatch(changes)
        for index in outgoing.operations.indices where !outgoing.operations[index].type.isDelete {
            let record = outgoing.operations[index].record
            let values = record.fields.assetValues
            guard !values.isEmpty else { continue }
            let held = replica.heldAssets(of: record.recordName)
            for value in values {
                guard let checksum = value.asset.fileChecksum, value.asset.receipt == nil,
                    !held.contains(FieldAsset(field: value.field, checksum: checksum))
                else { continue }
                let key = ReceiptKey(recordName: record.recordName, field: value.field, checksum: checksum)
                if let receipt = assetReceipts[key] {
                    outgoing.operations[index].record.fields.setReceipt(
                        receipt, field: value.field, position: value.position)
                    outgoing.carryingReceipts.insert(index)
                } else {
                    outgoing.uploads.append(
                        AssetUpload(operation: index, field: value.field, position: value.position, checksum: checksum))
                }
            }
        }
        guard !outgoing.uploads.isEmpty else { return save(outgoing) }
        run?.awaiting = .assetFiles(outgoing)
        var checksums: [String] = []
        var seen = Set<String>()
        for upload in outgoing.uploads where seen.insert(upload.checksum).inserted { checksums.append(upload.checksum) }
        return [.findAssetFiles(checksums)]
    }

    /// The files this device has of the assets to upload, by checksum.
    mutating func assetFilesFound(_ files: [String: URL], for outgoing: OutgoingBatch) -> [Action] {
        var outgoing = outgoing
        // Without the bytes here, the save goes with the checksum alone: the
        // server keeps an asset its field already holds (a save acknowledged
        // before a crash lost the acknowledgement), and refuses it otherwise.
        outgoing.uploads = outgoing.uploads.compactMap { upload in
            guard let file = files[upload.checksum] else { return nil }
            var found = upload
            found.file = file
            return found
        }
        guard !outgoing.uploads.isEmpty else { return save(outgoing) }
        run?.awaiting = .assetUploadTargets(outgoing)
        let requests = outgoing.uploads.map { upload in
            let record = outgoing.operations[upload.operation].record
            return AssetUploadRequest(
                recordName: record.recordName, recordType: record.recordType, fieldName: upload.field)
        }
        return [.requestAssetUploads(requests)]
    }

    // MARK: Uploading

    /// The answer to `assets/upload`: a refusal for good fails the saves it
    /// concerns; anything transient fails the batch.
    mutating func assetUploadsRequested(
        _ result: Result<[AssetUploadTarget], CloudError>, for outgoing: OutgoingBatch
    ) -> [Action] {
        var outgoing = outgoing
        switch result {
        case .failure(let error) where !error.isTransient:
            for upload in outgoing.uploads { outgoing.refuse(upload.operation, error) }
            return save(outgoing)
        case .failure(let error):
            return answered(outgoing.changes, .failure(error))
        case .success(let targets):
            guard targets.count == outgoing.uploads.count else {
                let reason = "assets/upload answered \(targets.count) of \(outgoing.uploads.count) URLs"
                return answered(outgoing.changes, .failure(CloudError(.internalError, reason: reason)))
            }
            outgoing.targets = targets
            return nextAssetUpload(outgoing)
        }
    }

    /// Sends the next asset whose save was not refused, or the saves once
    /// every asset is up.
    private mutating func nextAssetUpload(_ outgoing: OutgoingBatch) -> [Action] {
        var outgoing = outgoing
        while outgoing.next < outgoing.uploads.count,
            outgoing.refusals[outgoing.uploads[outgoing.next].operation] != nil
        {
            outgoing.next += 1
        }
        guard outgoing.next < outgoing.uploads.count else {
            for upload in outgoing.uploads where outgoing.refusals[upload.operation] == nil {
                outgoing.carryingReceipts.insert(upload.operation)
            }
            return save(outgoing)
        }
        guard let file = outgoing.uploads[outgoing.next].file else {
            preconditionFailure("Internal inconsistency: an asset upload without its file")
        }
        run?.awaiting = .assetUpload(outgoing)
        return [.uploadAsset(file, outgoing.targets[outgoing.next])]
    }

    /// The answer to the upload of one asset's bytes: its receipt goes
    /// into the save; a refusal for good (an asset over the server's size
    /// limit) fails the save alone; anything transient fails the batch.
    mutating func assetUploaded(_ result: Result<Asset, CloudError>, for outgoing: OutgoingBatch) -> [Action] {
        var outgoing = outgoing
        let upload = outgoing.uploads[outgoing.next]
        let recordName = outgoing.operations[upload.operation].record.recordName
        switch result {
        case .failure(let error) where error.code == .expired:
            // The URL expired before the bytes went: another next time.
            let retry = CloudError(.tryAgainLater, reason: error.reason, retryAfter: .zero, recordName: recordName)
            return answered(outgoing.changes, .failure(retry))
        case .failure(let error) where !error.isTransient:
            outgoing.refuse(upload.operation, error)
        case .failure(let error):
            return answered(outgoing.changes, .failure(error))
        case .success(let asset):
            guard let receipt = asset.receipt else {
                return answered(
                    outgoing.changes,
                    .failure(CloudError(.internalError, reason: "an asset upload answered no receipt")))
            }
            let key = ReceiptKey(recordName: recordName, field: upload.field, checksum: upload.checksum)
            assetReceipts[key] = receipt
            outgoing.operations[upload.operation].record.fields.setReceipt(
                receipt, field: upload.field, position: upload.position)
        }
        outgoing.next += 1
        return nextAssetUpload(outgoing)
    }

    /// The next asset's file could not be read: the next attempt finds it,
    /// or refuses the save.
    mutating func assetFileUnreadable(_ reason: String, for outgoing: OutgoingBatch) -> [Action] {
        let name = outgoing.uploads[outgoing.next].file?.lastPathComponent ?? "an asset"
        return answered(
            outgoing.changes, .failure(CloudError(.internalError, reason: "cannot send \(name): \(reason)")))
    }

    // MARK: Saving

    /// Sends the saves no refusal stopped, with their receipts.
    private mutating func save(_ outgoing: OutgoingBatch) -> [Action] {
        let sent = outgoing.sent
        // Every save was refused on the way: the refusals are the answers.
        guard !sent.isEmpty else { return answered(outgoing.changes, .success(settle([], of: outgoing))) }
        run?.awaiting = .answer(outgoing)
        return [.send(sent.map { outgoing.operations[$0] })]
    }

    /// The answer to a batch's `records/modify`, with its receipts settled.
    mutating func saved(_ result: Result<[RecordResult], CloudError>, for outgoing: OutgoingBatch) -> [Action] {
        switch result {
        case .failure(let error): return answered(outgoing.changes, .failure(error))
        case .success(let answers): return answered(outgoing.changes, .success(settle(answers, of: outgoing)))
        }
    }

    /// One result for each change of the batch: the refusal of a save that
    /// did not leave, else the server's answer with its receipts settled.
    private mutating func settle(_ answers: [RecordResult], of outgoing: OutgoingBatch) -> [RecordResult] {
        var results = [RecordResult?](repeating: nil, count: outgoing.operations.count)
        for (index, error) in outgoing.refusals { results[index] = .failure(error) }
        for (index, answer) in zip(outgoing.sent, answers) {
            results[index] =
                outgoing.carryingReceipts.contains(index)
                ? settleReceipts(answer, of: outgoing.operations[index]) : answer
        }
        // A change the server did not answer is transient: still in doubt, sent again.
        return results.map { $0 ?? .failure(CloudError(.internalError, reason: "the server answered no result")) }
    }

    /// The answer to a save, with its receipts settled: forgotten once the
    /// save is answered for good; a refused receipt turns the answer into
    /// a transient failure, so that the save goes again after a new upload.
    private mutating func settleReceipts(_ answer: RecordResult, of operation: RecordOperation) -> RecordResult {
        if case .failure(let error) = answer, error.isTransient || error.code == .conflict || error.code == .exists {
            // In doubt or to be merged: the same receipts go again.
            return answer
        }
        let record = operation.record
        for value in record.fields.assetValues where value.asset.receipt != nil {
            guard let checksum = value.asset.fileChecksum else { continue }
            assetReceipts[ReceiptKey(recordName: record.recordName, field: value.field, checksum: checksum)] = nil
        }
        if case .failure(let error) = answer, error.code == .badRequest || error.code == .expired,
            error.reason.contains("receipt")
        {
            return .failure(
                CloudError(
                    .tryAgainLater, reason: "an asset's receipt was refused (\(error.reason)); uploading it again",
                    retryAfter: .zero, recordName: record.recordName, zoneID: zoneID))
        }
        return answer
    }
}
