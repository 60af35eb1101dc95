import Cumulus
import CumulusTesting
import Foundation
import Testing

/// Bytes that differ at every offset a chunk boundary could fall on.
func assetBytes(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 8) ^ seed) }
}

/// Every byte a download yields, in order.
func readAll(_ download: AssetDownload) async throws -> [UInt8] {
    var bytes: [UInt8] = []
    for try await chunk in download { bytes += chunk }
    return bytes
}

extension CloudDatabase {
    /// Asks for an upload URL for one field and sends `bytes` to it from a
    /// temporary file, returning the asset to save.
    func uploadAsset(
        _ bytes: [UInt8], record: String, field: String = "photo", type: String = "Note", in zoneID: ZoneID = notesZone
    ) async throws -> Asset {
        let targets = try await requestAssetUploads(
            [AssetUploadRequest(recordName: record, recordType: type, fieldName: field)], zoneID: zoneID)
        let target = try #require(targets.first)
        #expect(targets.count == 1)
        #expect(target.recordName == record)
        #expect(target.fieldName == field)
        return try await uploadAsset(bytes, to: target)
    }

    /// Sends `bytes` to `target` from a temporary file.
    func uploadAsset(_ bytes: [UInt8], to target: AssetUploadTarget) async throws -> Asset {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-asset-\(UUID().uuidString)")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try await uploadAsset(contentsOf: file, to: target)
    }
}

extension CloudDatabaseConformance {
    static let assetChecks: [Check] = [
        Check("an uploaded asset is saved, fetched with a download URL, and read back exactly") {
            try await $0.assetRoundTrip()
        },
        Check("a download reads a byte range inside the asset") { try await $0.assetRanges() },
        Check("a receipt of another user, record or field, or none, is refused") {
            try await $0.foreignReceiptsAreRefused()
        },
        Check("receipts, upload URLs and download URLs expire") { try await $0.assetURLsExpire() },
        Check("a read-only participant downloads a shared asset but cannot upload") {
            try await $0.sharedAssets()
        },
        Check("anyone with a public record's download URL reads it; only users upload") {
            try await $0.publicAssets()
        },
        Check("an asset over the size limit is refused") { try await $0.oversizeAssetIsRefused() },
        Check("collecting deletes unheld assets after the grace period and keeps held ones") {
            try await $0.unheldAssetsAreCollected()
        },
        Check("clearing an asset field lets go of its asset") { try await $0.clearedAssetFieldIsCollected() },
    ]

    // MARK: Checks

    func assetRoundTrip() async throws {
        let alice = try await deviceWithZone()
        let bytes = assetBytes(200_000)
        let uploaded = try await alice.uploadAsset(bytes, record: "n1")
        let checksum = Data(SHA256.hash(bytes)).base64EncodedString()
        #expect(uploaded.fileChecksum == checksum)
        #expect(uploaded.size == Int64(bytes.count))
        #expect(uploaded.receipt?.isEmpty == false)
        let empty = try await alice.uploadAsset([], record: "n1", field: "thumbnails")
        let small = try await alice.uploadAsset(assetBytes(10, seed: 7), record: "n1", field: "thumbnails")

        let saved = try await alice.create([
            note("n1", ["photo": .asset(uploaded), "thumbnails": .assetList([empty, small])])
        ])
        let savedAsset = try #require(saved.first?["photo"]?.assetValue)
        #expect(savedAsset.fileChecksum == checksum)
        #expect(savedAsset.size == Int64(bytes.count))
        #expect(savedAsset.receipt == nil)
        let url = try #require(savedAsset.downloadURL)
        #expect(url.contains("/assets/1/download/"))
        #expect(url.hasSuffix("/${f}"))

        // Every read carries the asset with a URL to its bytes.
        let fetched = try #require(try await alice.fetch("n1"))
        let asset = try #require(fetched["photo"]?.assetValue)
        #expect(try await readAll(try await alice.downloadAsset(asset, range: nil)) == bytes)
        let download = try await alice.downloadAsset(asset, range: nil)
        #expect(download.assetSize == Int64(bytes.count))
        #expect(download.range == 0..<Int64(bytes.count))
        guard case .assetList(let thumbnails) = try #require(fetched["thumbnails"]) else {
            Issue.record("thumbnails is not an asset list: \(fetched)")
            return
        }
        #expect(thumbnails.map(\.size) == [0, 10])
        #expect(try await readAll(try await alice.downloadAsset(thumbnails[0], range: nil)) == [])
        #expect(try await readAll(try await alice.downloadAsset(thumbnails[1], range: nil)) == assetBytes(10, seed: 7))
        let changed = try await alice.zoneChanges(since: nil).records.compactMap(\.record)
        #expect(changed.first?["photo"]?.assetValue?.downloadURL != nil)
        let queried = try await alice.queryRecords(
            RecordQuery(recordType: "Note"), zoneID: notesZone, resultsLimit: nil, continuationMarker: nil,
            desiredKeys: nil)
        let queriedAsset = try #require(queried.records.first?["photo"]?.assetValue)
        #expect(try await readAll(try await alice.downloadAsset(queriedAsset, range: nil)) == bytes)

        // Saving the fetched record again keeps its assets, as another device does.
        var edit = fetched
        edit["title"] = .string("renamed")
        let resaved = try #require(try await alice.apply([RecordOperation(.update, edit)]).first)
        #expect(resaved["photo"]?.assetValue?.fileChecksum == checksum)
        #expect(
            try await readAll(try await alice.downloadAsset(try #require(resaved["photo"]?.assetValue), range: nil))
                == bytes)
    }

    func assetRanges() async throws {
        let alice = try await deviceWithZone()
        let bytes = assetBytes(150_000, seed: 3)
        let uploaded = try await alice.uploadAsset(bytes, record: "n1")
        try await alice.create([note("n1", ["photo": .asset(uploaded)])])
        let asset = try #require(try await alice.fetch("n1")?["photo"]?.assetValue)
        let middle = try await alice.downloadAsset(asset, range: 70_000..<140_001)
        #expect(middle.assetSize == 150_000)
        #expect(middle.range == 70_000..<140_001)
        #expect(try await readAll(middle) == Array(bytes[70_000..<140_001]))
        // Resuming after the bytes written so far.
        #expect(try await readAll(try await alice.downloadAsset(asset, range: 149_999..<150_000)) == [bytes[149_999]])
        for range: Range<Int64> in [149_000..<150_001, 150_000..<150_010, 10..<10] {
            await expectCloudError(.rangeNotSatisfiable) { try await alice.downloadAsset(asset, range: range) }
        }
    }

    func foreignReceiptsAreRefused() async throws {
        let alice = try await deviceWithZone()
        let bob = try await deviceWithZone("bob")
        let bytes = assetBytes(1000)
        let forN1 = try await alice.uploadAsset(bytes, record: "n1")
        let bobs = try await bob.uploadAsset(bytes, record: "n1")
        let refused: [(String, String, Asset, String)] = [
            ("n1", "photo", bobs, "another user"),
            ("n2", "photo", forN1, "another record"),
            ("n1", "cover", forN1, "another field"),
            ("n1", "photo", Asset(fileChecksum: forN1.fileChecksum, size: forN1.size, receipt: "made-up"), "unknown"),
            ("n1", "photo", Asset(fileChecksum: forN1.fileChecksum, size: forN1.size), "without a receipt"),
            ("n1", "photo", Asset(fileChecksum: "AAAA", size: forN1.size, receipt: forN1.receipt), "fileChecksum"),
        ]
        for (name, field, asset, reason) in refused {
            let error = expectFailure(
                try await alice.modify(RecordOperation(.create, note(name, [field: .asset(asset)]))), .badRequest)
            #expect(error?.recordName == name)
            #expect(error?.reason.contains(reason) == true, "\(String(describing: error))")
        }
        #expect(try await alice.fetch("n1") == nil)
        #expect(try await alice.fetch("n2") == nil)
        // Alice's receipt in Bob's record of the same name and field is still another user's.
        expectFailure(
            try await bob.modify(RecordOperation(.create, note("n1", ["photo": .asset(forN1)]))), .badRequest)
        // The receipts themselves still work where they belong.
        try await alice.create([note("n1", ["photo": .asset(forN1)])])
        try await bob.create([note("n1", ["photo": .asset(bobs)])])
    }

    func assetURLsExpire() async throws {
        let alice = try await deviceWithZone()
        let bytes = assetBytes(2000)
        let uploaded = try await alice.uploadAsset(bytes, record: "n1")
        // A save whose answer was lost is sent again with the same receipt.
        try await alice.create([note("n1", ["photo": .asset(uploaded)])])
        let retried = try await alice.modify(RecordOperation(.forceReplace, note("n1", ["photo": .asset(uploaded)])))
        #expect(retried.record?["photo"]?.assetValue?.fileChecksum == uploaded.fileChecksum)
        guard let controls = backend.assets else { return }

        let late = try await alice.uploadAsset(bytes, record: "n2")
        let unused = try #require(
            try await alice.requestAssetUploads(
                [AssetUploadRequest(recordName: "n3", recordType: "Note", fieldName: "photo")], zoneID: notesZone
            ).first)
        let asset = try #require(try await alice.fetch("n1")?["photo"]?.assetValue)
        try await controls.passTime(controls.assetGracePeriod + .seconds(60))
        expectFailure(
            try await alice.modify(RecordOperation(.create, note("n2", ["photo": .asset(late)]))), .badRequest)
        await expectCloudError(.expired) { try await alice.uploadAsset(bytes, to: unused) }
        await expectCloudError(.expired) { try await alice.downloadAsset(asset, range: nil) }
        // A fresh fetch carries a fresh URL.
        let fresh = try #require(try await alice.fetch("n1")?["photo"]?.assetValue)
        #expect(try await readAll(try await alice.downloadAsset(fresh, range: nil)) == bytes)
        // A URL that is not the server's is refused.
        var forged = fresh
        forged.downloadURL = fresh.downloadURL?.replacingOccurrences(of: "/download/", with: "/download/x")
        await expectCloudError(.accessDenied) { try await alice.downloadAsset(forged, range: nil) }
    }

    func sharedAssets() async throws {
        let alice = try await alicesAlbums()
        let bytes = assetBytes(5000, seed: 9)
        let uploaded = try await alice.uploadAsset(bytes, record: "p1", type: "Photo", in: albumsZone)
        var p1 = try #require(try await alice.fetch("p1", in: albumsZone))
        p1["photo"] = .asset(uploaded)
        try await alice.apply([RecordOperation(.update, p1)], in: albumsZone)
        let carolName = try await recordName(of: "carol")
        let bobName = try await recordName(of: "bob")
        let share = try await shareAlbum(
            alice,
            participants: [
                ShareParticipant(lookupInfo: .user(carolName), permission: .readOnly),
                ShareParticipant(lookupInfo: .user(bobName), permission: .readWrite),
            ])
        let carol = try await accept(try shortGUID(share), as: "carol")
        let seen = try #require(try await carol.shared.fetch("p1", in: carol.zone)?["photo"]?.assetValue)
        #expect(try await readAll(try await carol.shared.downloadAsset(seen, range: nil)) == bytes)
        let upload = [AssetUploadRequest(recordName: "p1", recordType: "Photo", fieldName: "photo")]
        await expectCloudError(.accessDenied) { try await carol.shared.requestAssetUploads(upload, zoneID: carol.zone) }
        let newPhoto = [AssetUploadRequest(recordName: "p9", recordType: "Photo", fieldName: "photo")]
        await expectCloudError(.accessDenied) {
            try await carol.shared.requestAssetUploads(newPhoto, zoneID: carol.zone)
        }
        // Outside the share, a record reads as missing to everyone but its owner.
        let outside = [AssetUploadRequest(recordName: "p3", recordType: "Photo", fieldName: "photo")]

        let bob = try await accept(try shortGUID(share), as: "bob")
        await expectCloudError(.accessDenied) { try await bob.shared.requestAssetUploads(outside, zoneID: bob.zone) }
        let replacement = assetBytes(3000, seed: 1)
        let target = try #require(try await bob.shared.requestAssetUploads(upload, zoneID: bob.zone).first)
        let asset = try await bob.shared.uploadAsset(replacement, to: target)
        var edit = try #require(try await bob.shared.fetch("p1", in: bob.zone))
        edit["photo"] = .asset(asset)
        try await bob.shared.apply([RecordOperation(.update, edit)], in: bob.zone)
        let now = try #require(try await alice.fetch("p1", in: albumsZone)?["photo"]?.assetValue)
        #expect(try await readAll(try await alice.downloadAsset(now, range: nil)) == replacement)
        // Bob's receipt is his own, even for the owner of the record.
        let bobsOther = try await bob.shared.uploadAsset(replacement, to: target)
        var owners = try #require(try await alice.fetch("p1", in: albumsZone))
        owners["photo"] = .asset(bobsOther)
        let error = expectFailure(try await alice.modify(RecordOperation(.update, owners), in: albumsZone), .badRequest)
        #expect(error?.reason.contains("another user") == true)
    }

    func publicAssets() async throws {
        let zone = ZoneID.defaultZone
        let alice = try await backend.database(signedInAs: "alice", scope: .public)
        let bytes = assetBytes(4000, seed: 5)
        let uploaded = try await alice.uploadAsset(bytes, record: "pinned", in: zone)
        try await alice.create([note("pinned", in: zone, ["photo": .asset(uploaded)])], in: zone)
        let asset = try #require(try await alice.fetch("pinned", in: zone)?["photo"]?.assetValue)

        // Bob may upload for a record of his own, not for Alice's.
        let bob = try await backend.database(signedInAs: "bob", scope: .public)
        let hers = [AssetUploadRequest(recordName: "pinned", recordType: "Note", fieldName: "photo")]
        await expectCloudError(.accessDenied) { try await bob.requestAssetUploads(hers, zoneID: zone) }
        let his = [AssetUploadRequest(recordName: nil, recordType: "Note", fieldName: "photo")]
        let picked = try #require(try await bob.requestAssetUploads(his, zoneID: zone).first)
        #expect(!picked.recordName.isEmpty)

        guard let faults = backend.faults else { return }
        let anonymous = try await backend.database(signedInAs: "carol", scope: .public)
        try await faults.signOut(anonymous)
        #expect(try await readAll(try await anonymous.downloadAsset(asset, range: nil)) == bytes)
        await expectCloudError(.authenticationRequired) {
            try await anonymous.requestAssetUploads(his, zoneID: zone)
        }
    }

    func oversizeAssetIsRefused() async throws {
        guard let controls = backend.assets else { return }
        let alice = try await deviceWithZone()
        let limit = Int(controls.assetSizeLimit)
        let fits = try await alice.uploadAsset(assetBytes(limit), record: "n1")
        #expect(fits.size == Int64(limit))
        let target = try #require(
            try await alice.requestAssetUploads(
                [AssetUploadRequest(recordName: "n2", recordType: "Note", fieldName: "photo")], zoneID: notesZone
            ).first)
        await expectCloudError(.limitExceeded) { try await alice.uploadAsset(assetBytes(limit + 1), to: target) }
    }

    func unheldAssetsAreCollected() async throws {
        guard let controls = backend.assets else { return }
        let alice = try await deviceWithZone()
        let kept = try await alice.uploadAsset(assetBytes(100, seed: 1), record: "n1")
        _ = try await alice.uploadAsset(assetBytes(100, seed: 2), record: "n2")  // never saved
        let replaced = try await alice.uploadAsset(assetBytes(100, seed: 3), record: "n3")
        let deleted = try await alice.uploadAsset(assetBytes(100, seed: 4), record: "n4")
        try await alice.create([
            note("n1", ["photo": .asset(kept)]), note("n3", ["photo": .asset(replaced)]),
            note("n4", ["photo": .asset(deleted)]),
        ])
        let replacement = try await alice.uploadAsset(assetBytes(100, seed: 5), record: "n3")
        try await alice.apply([
            RecordOperation(.forceUpdate, note("n3", ["photo": .asset(replacement)])),
            RecordOperation(.forceDelete, note("n4")),
        ])
        #expect(try await controls.storedAssetCount() == 5)

        // Within the grace period nothing goes.
        try await controls.passTime(controls.assetGracePeriod - .seconds(60))
        try await controls.collectAssets()
        #expect(try await controls.storedAssetCount() == 5)
        try await controls.passTime(.seconds(120))
        try await controls.collectAssets()
        #expect(try await controls.storedAssetCount() == 2)
        let held = try #require(try await alice.fetch("n1")?["photo"]?.assetValue)
        #expect(try await readAll(try await alice.downloadAsset(held, range: nil)) == assetBytes(100, seed: 1))

        // A deleted zone lets go of its assets.
        _ = try await alice.modifyZones([.delete(notesZone)])
        try await controls.collectAssets()
        #expect(try await controls.storedAssetCount() == 2)
        try await controls.passTime(controls.assetGracePeriod + .seconds(60))
        try await controls.collectAssets()
        #expect(try await controls.storedAssetCount() == 0)
    }
}

extension CloudDatabaseConformance {
    func clearedAssetFieldIsCollected() async throws {
        guard let controls = backend.assets else { return }
        let alice = try await deviceWithZone()
        let photo = try await alice.uploadAsset(assetBytes(100, seed: 1), record: "n1")
        let thumbnail = try await alice.uploadAsset(assetBytes(100, seed: 2), record: "n1", field: "thumbnail")
        var stored = try #require(
            try await alice.create([note("n1", ["photo": .asset(photo), "thumbnail": .asset(thumbnail)])]).first)
        stored.fields = [:]
        let updated = try requireRecord(
            try await alice.modify(RecordOperation(.update, stored, clearedFields: ["thumbnail"])))
        #expect(updated.fields.keys == ["photo"])
        try await controls.passTime(controls.assetGracePeriod + .seconds(60))
        try await controls.collectAssets()
        #expect(try await controls.storedAssetCount() == 1)
        let held = try #require(try await alice.fetch("n1")?["photo"]?.assetValue)
        #expect(try await readAll(try await alice.downloadAsset(held, range: nil)) == assetBytes(100, seed: 1))
    }
}

extension FieldValue {
    /// The asset of an `ASSETID` value.
    var assetValue: Asset? {
        if case .asset(let asset) = self { return asset }
        return nil
    }
}
