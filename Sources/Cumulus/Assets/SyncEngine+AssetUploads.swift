import CloudCodable
import Foundation

extension SyncEngine {
    /// One asset value of a save that the server does not hold in that
    /// field yet: its bytes go first, and the save carries the receipt.
    private struct AssetUpload {
        var operation: Int
        var field: String
        /// The value's place in an `ASSETID_LIST`; `nil` for an `ASSETID`.
        var position: Int?
        var checksum: String
        var file: URL
    }

    /// Sends a batch: first the bytes of the assets its saves hold that the
    /// server does not (`assets/upload`, then each file), then the saves
    /// with the uploads' receipts.
    ///
    /// A save whose assets cannot be uploaded for good fails alone; a
    /// transient failure fails the whole batch, which is sent again (an
    /// upload whose answer was lost is made again, and the server collects
    /// the unused one). A receipt stays in memory until its save is
    /// answered, so that a save in doubt is sent again with the same one;
    /// a receipt the server refuses (expired) is dropped, and the asset
    /// uploaded again on the next attempt.
    func modifyRecordsSendingAssets(_ operations: [RecordOperation]) async throws -> [RecordResult] {
        retireAssetCopies()
        var operations = operations
        var refusals: [Int: CloudError] = [:]
        var uploads: [AssetUpload] = []
        var withReceipts = Set<Int>()
        for index in operations.indices where !operations[index].type.isDelete {
            let record = operations[index].record
            let values = record.fields.assetValues
            guard !values.isEmpty else { continue }
            let held = replica.heldAssets(of: record.recordName)
            for value in values {
                let (field, place) = (value.field, value.position)
                guard let checksum = value.asset.fileChecksum, value.asset.receipt == nil,
                    !held.contains(FieldAsset(field: field, checksum: checksum))
                else { continue }
                if let receipt = assets.receipt(record: record.recordName, field: field, checksum: checksum) {
                    operations[index].record.fields.setReceipt(receipt, field: field, position: place)
                    withReceipts.insert(index)
                } else if let file = assets.file(for: checksum) {
                    uploads.append(
                        AssetUpload(operation: index, field: field, position: place, checksum: checksum, file: file))
                }
                // Without the bytes here, the save goes with the checksum alone: the
                // server keeps an asset its field already holds (a save acknowledged
                // before a crash lost the acknowledgement), and refuses it otherwise.
            }
        }
        if !uploads.isEmpty {
            try await upload(uploads, into: &operations, refusals: &refusals)
            for upload in uploads where refusals[upload.operation] == nil { withReceipts.insert(upload.operation) }
        }
        var sent: [Int] = []
        for index in operations.indices where refusals[index] == nil { sent.append(index) }
        let answers =
            sent.isEmpty
            ? []
            : try await checkedDatabase.modifyRecords(sent.map { operations[$0] }, zoneID: zoneID, atomic: false)
        var results = [RecordResult?](repeating: nil, count: operations.count)
        for (index, error) in refusals { results[index] = .failure(error) }
        for (index, answer) in zip(sent, answers) {
            results[index] = settleReceipts(
                answer, of: operations[index], carriedReceipts: withReceipts.contains(index))
        }
        return results.map { $0 ?? .failure(CloudError(.internalError, reason: "the server answered no result")) }
    }

    /// Asks for upload URLs and sends the files, writing each receipt into
    /// its save. A refusal for good fails the saves it concerns; anything
    /// transient throws.
    private func upload(
        _ uploads: [AssetUpload], into operations: inout [RecordOperation], refusals: inout [Int: CloudError]
    ) async throws {
        let requests = uploads.map { upload in
            let record = operations[upload.operation].record
            return AssetUploadRequest(
                recordName: record.recordName, recordType: record.recordType, fieldName: upload.field)
        }
        let targets: [AssetUploadTarget]
        do {
            targets = try await checkedDatabase.requestAssetUploads(requests, zoneID: zoneID)
        } catch let error as CloudError where !error.isTransient {
            for upload in uploads { refusals[upload.operation] = Self.refusal(error, operations[upload.operation]) }
            return
        }
        guard targets.count == uploads.count else {
            throw CloudError(.internalError, reason: "assets/upload answered \(targets.count) of \(uploads.count) URLs")
        }
        for (upload, target) in zip(uploads, targets) where refusals[upload.operation] == nil {
            let record = operations[upload.operation].record
            let answer: Asset
            do {
                answer = try await checkedDatabase.uploadAsset(contentsOf: upload.file, to: target)
            } catch let error as CloudError where error.code == .expired {
                // The URL expired before the bytes went: another next time.
                throw CloudError(.tryAgainLater, reason: error.reason, retryAfter: .zero, recordName: record.recordName)
            } catch let error as CloudError where !error.isTransient {
                refusals[upload.operation] = Self.refusal(error, operations[upload.operation])
                continue
            } catch let error where !(error is CloudError || error is CancellationError) {
                // The copy could not be read: the next attempt finds it, or refuses the save.
                throw CloudError(.internalError, reason: "cannot send \(upload.file.lastPathComponent): \(error)")
            }
            guard let receipt = answer.receipt else {
                throw CloudError(.internalError, reason: "an asset upload answered no receipt")
            }
            assets.setReceipt(receipt, record: record.recordName, field: upload.field, checksum: upload.checksum)
            operations[upload.operation].record.fields.setReceipt(
                receipt, field: upload.field, position: upload.position)
        }
    }

    /// The answer to a save, with its receipts settled: forgotten once the
    /// save is answered for good; a refused receipt turns the answer into
    /// a transient failure, so that the save goes again after a new upload.
    private func settleReceipts(_ answer: RecordResult, of operation: RecordOperation, carriedReceipts: Bool)
        -> RecordResult
    {
        guard carriedReceipts else { return answer }
        if case .failure(let error) = answer, error.isTransient || error.code == .conflict || error.code == .exists {
            // In doubt or to be merged: the same receipts go again.
            return answer
        }
        let record = operation.record
        for value in record.fields.assetValues where value.asset.receipt != nil {
            guard let checksum = value.asset.fileChecksum else { continue }
            assets.setReceipt(nil, record: record.recordName, field: value.field, checksum: checksum)
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

    private static func refusal(_ error: CloudError, _ operation: RecordOperation) -> CloudError {
        var refusal = error
        refusal.recordName = refusal.recordName ?? operation.record.recordName
        return refusal
    }

    // MARK: Local copies

    /// The keys of the assets the pending saves hold: their local copies stay.
    func pendingAssetKeys() -> Set<String> {
        Set(replica.pendingAssetChecksums.map(AssetStore.key))
    }

    /// Moves the local copies no pending save holds into the cache (the
    /// server acknowledged their records, or they were never queued), and
    /// trims the cache.
    func retireAssetCopies() {
        // An engine without local copies (most sends) has nothing to move.
        guard assets.hasLocalCopies else { return }
        let held = pendingAssetKeys()
        assets.retire(keeping: held)
        assets.evict(protecting: held)
    }
}
