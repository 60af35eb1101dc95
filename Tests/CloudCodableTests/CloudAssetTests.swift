import Foundation
import Testing

@testable import CloudCodable

@Suite("CloudAsset")
struct CloudAssetTests {
    struct Album: CloudCodable, Identifiable {
        var id: String
        var cover: CloudAsset
        var pages: [CloudAsset] = []
        var back: CloudAsset? = nil
        var title = ""
        var cloudMetadata: RecordMetadata?
    }

    let bytes = Data("the bytes of a picture".utf8)

    @Test("the checksum is the base64 SHA-256 of the bytes, as the server's fileChecksum")
    func checksum() throws {
        let asset = CloudAsset(data: Data("abc".utf8))
        #expect(asset.checksum == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
        #expect(asset.size == 3)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("asset-\(UUID().uuidString)")
        try Data("abc".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try CloudAsset(contentsOf: file) == asset)
    }

    @Test("an asset property becomes an ASSETID field of checksum and size, and decodes back")
    func fields() throws {
        let cover = CloudAsset(data: bytes)
        let page = CloudAsset(data: Data("page".utf8))
        let album = Album(id: "a", cover: cover, pages: [page, cover])
        let record = try RecordEncoder().encode(album)
        #expect(record["cover"] == .asset(Asset(fileChecksum: cover.checksum, size: cover.size)))
        #expect(record["pages"]?.type == .assetList)
        #expect(record["back"] == nil)
        // A fetched record carries more (a download URL); the model keeps the contents' identity.
        var fetched = record
        fetched.fields["cover"] = .asset(
            Asset(fileChecksum: cover.checksum, size: cover.size, downloadURL: "https://example.com/a"))
        fetched.fields["back"] = .asset(Asset(fileChecksum: page.checksum, size: page.size, receipt: "r"))
        let decoded = try RecordDecoder().decode(Album.self, from: fetched)
        #expect(decoded.cover == cover)
        #expect(decoded.pages == [page, cover])
        #expect(decoded.back == page)
    }

    @Test("assets are equal and hash alike by contents, wherever their bytes are")
    func identity() {
        let made = CloudAsset(data: bytes)
        let fetched = CloudAsset(checksum: made.checksum, size: made.size)
        #expect(made == fetched)
        #expect(Set([made, fetched]).count == 1)
        #expect(made != CloudAsset(data: Data("other".utf8)))
    }

    @Test("Codable keeps the bytes of an asset not uploaded yet, so an app can store its models")
    func codable() throws {
        let made = CloudAsset(data: bytes)
        let json = try JSONEncoder().encode(made)
        let decoded = try JSONDecoder().decode(CloudAsset.self, from: json)
        #expect(decoded == made)
        guard case .data(let kept)? = decoded.source else {
            Issue.record("the bytes were not kept")
            return
        }
        #expect(kept == bytes)
        let reference = try JSONDecoder().decode(
            CloudAsset.self, from: JSONEncoder().encode(CloudAsset(checksum: "c", size: 1)))
        #expect(reference.source == nil)
    }

    @Test("the encoder hands the assets with bytes to a collector, and only to one")
    func collecting() throws {
        let cover = CloudAsset(data: bytes)
        let album = Album(id: "a", cover: cover, pages: [CloudAsset(checksum: "fetched", size: 1)])
        let (_, assets) = try CloudAsset.collecting { try RecordEncoder().encode(album) }
        #expect(assets == [cover])
        // Without a collector nothing is kept.
        _ = try RecordEncoder().encode(album)
        let (_, none) = CloudAsset.collecting { 0 }
        #expect(none.isEmpty)
    }

    @Test("the default merge sees a fresh download URL or a receipt as no change")
    func mergeByContents() throws {
        let cover = CloudAsset(data: bytes)
        let base = try RecordEncoder().encode(Album(id: "a", cover: cover, title: "old")).fields
        var server = base
        server["cover"] = .asset(Asset(fileChecksum: cover.checksum, size: cover.size, downloadURL: "https://x/1"))
        server["title"] = .string("theirs")
        var ancestor = base
        ancestor["cover"] = .asset(Asset(fileChecksum: cover.checksum, size: cover.size, downloadURL: "https://x/0"))
        let newCover = CloudAsset(data: Data("new".utf8))
        var client = base
        client["cover"] = .asset(newCover.fieldValue)
        let merged = FieldMerge.merge(client: client, server: server, ancestor: ancestor)
        #expect(merged["cover"] == .asset(newCover.fieldValue))
        #expect(merged["title"] == .string("theirs"))
        // The client left the asset alone: the server's value stays, even with another URL.
        let untouched = FieldMerge.merge(client: base, server: server, ancestor: ancestor)
        #expect(untouched["title"] == .string("theirs"))
        #expect(untouched["cover"] == server["cover"])
    }
}
