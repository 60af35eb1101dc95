import CloudCodable
import Foundation
import Testing

@testable import Cumulus
@testable import CumulusServerCore

@Suite("Asset signing and presentation")
struct AssetCoreTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
    }

    @Test("HMAC-SHA256 gives the RFC 4231 codes")
    func rfc4231() {
        #expect(
            hex(HMACSHA256.code(for: Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            hex(HMACSHA256.code(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // A key longer than a block is hashed first (test case 6).
        #expect(
            hex(
                HMACSHA256.code(
                    for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                    key: [UInt8](repeating: 0xaa, count: 131)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test("a download token verifies only as signed, under its own secret")
    func tokens() throws {
        let secret = [UInt8](repeating: 7, count: 32)
        let token = AssetToken.make(assetID: "abc", expires: 1_700_000_000_000, secret: secret)
        let verified = try #require(AssetToken.verify(token, secret: secret))
        #expect(verified.assetID == "abc")
        #expect(verified.expires == 1_700_000_000_000)
        #expect(!token.contains("/") && !token.contains("+") && !token.contains("="))
        let parts = token.split(separator: ".").map(String.init)
        let later = String(1_800_000_000_000, radix: 36)
        for forged in [
            "abd.\(parts[1]).\(parts[2])", "abc.\(later).\(parts[2])", "abc.\(parts[1]).\(parts[2].dropLast())A",
            "abc.\(parts[1])", token + ".x", "",
        ] {
            #expect(AssetToken.verify(forged, secret: secret) == nil, "\(forged)")
        }
        #expect(AssetToken.verify(token, secret: [UInt8](repeating: 8, count: 32)) == nil)
    }

    @Test("a page of changes kept in the wire form carries download URLs, never the stored ids")
    func encodedPages() throws {
        var record = Record(recordType: "Note", recordName: "n1", zoneID: ZoneID(zoneName: "Notes"))
        record["photo"] = .asset(AssetRules.storedValue(id: "asset1", checksum: "c", size: 3))
        record["title"] = .string("plain")
        let plain = Record(recordType: "Note", recordName: "n2", zoneID: ZoneID(zoneName: "Notes"))
        let page = ChangesPage(
            zoneID: ZoneID(zoneName: "Notes"),
            entries: [
                StoredChange(name: "n1", serial: 1, contents: .encoded(try WireFormat.encode(record))),
                StoredChange(name: "n2", serial: 2, contents: .encoded(try WireFormat.encode(plain))),
            ],
            desiredKeys: nil, syncToken: SyncToken(rawValue: "t"), moreComing: false)
        let answer = ServiceAnswer(form: .zoneChanges([.success(page)]))
        #expect(answer.containsRecord(where: AssetRules.hasAssets, encoded: AssetRules.mayHoldAssets))
        #expect(!AssetRules.mayHoldAssets(try WireFormat.encode(plain)))
        let presenter = AssetPresenter(secret: [1, 2, 3], expires: 5000, base: "https://cloud.example")
        let body = String(
            decoding: try answer.mappingRecords(decoding: AssetRules.mayHoldAssets, presenter.present).encodedBody(),
            as: UTF8.self)
        #expect(!body.contains(AssetRules.idPrefix))
        let url = presenter.url(forAsset: "asset1")
        #expect(url.hasPrefix("https://cloud.example/assets/1/download/asset1."))
        #expect(url.hasSuffix("/${f}"))
        #expect(body.contains(url.replacingOccurrences(of: "/", with: "\\/")) || body.contains(url))
    }

    @Test("the stored form of a record hides its assets' ids")
    func storedForm() {
        var record = Record(recordType: "Note", recordName: "n1", zoneID: ZoneID(zoneName: "Notes"))
        record["photos"] = .assetList([AssetRules.storedValue(id: "a", checksum: "c", size: 1)])
        #expect(record.withoutAssetIDs()["photos"] == .assetList([Asset(fileChecksum: "c", size: 1)]))
    }
}
