import Cumulus
@_spi(Testing) import CumulusServer
import Foundation
import Synchronization
import Testing

/// The asset URLs over HTTP, on each store: an upload streamed to storage
/// under the asset limit (not the JSON body limit), a download with byte
/// ranges, and the URL as the only credential.
@Suite("HTTP asset URLs")
struct HTTPAssetTests {
    /// Runs `body` with a server whose clock the test moves, stopping it after.
    static func withServer(
        _ store: TestStore, configuration: ServerConfiguration = ServerConfiguration(port: 0, logger: quietLogger),
        assetSettings: AssetSettings = AssetSettings(), _ body: (RunningServer, TestWallClock) async throws -> Void
    ) async throws {
        let server = try await RunningServer.start(
            store: store, configuration: configuration, assetSettings: assetSettings)
        do {
            try await body(server, server.clock)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "upload, save, fetch and download give back the exact bytes, whole or by range", arguments: TestStore.available)
    func roundTrip(_ store: TestStore) async throws {
        try await Self.withServer(store) { server, _ in
            let alice = try await server.database(signedInAs: "alice")
            // Larger than a chunk of either store, so that ranges cross chunks.
            let bytes = AssetHTTP.randomBytes(1_300_000)
            _ = try await AssetHTTP.savePhoto("photo", bytes: bytes, in: alice, on: server.baseURL)
            let fetched = try await alice.lookupRecords(["photo"], zoneID: .defaultZone, desiredKeys: nil)
            let url = try #require(AssetHTTP.downloadURL(of: fetched.first?.record))

            let whole = try await AssetHTTP.download(url, on: server.baseURL)
            #expect(whole.status == 200)
            #expect(whole.body == bytes)
            #expect(whole.headers["content-length"] == "\(bytes.count)")
            #expect(whole.headers["accept-ranges"] == "bytes")

            let size = bytes.count
            let ranges: [(String, Range<Int>)] = [
                ("bytes=10-19", 10..<20), ("bytes=262000-1050000", 262_000..<1_050_001), ("bytes=-5", size - 5..<size),
                ("bytes=1299990-", 1_299_990..<size), ("bytes=-99999999", 0..<size),
                // A last byte past the end is the end (RFC 9110), however far past.
                ("bytes=0-\(size)", 0..<size), ("bytes=1299990-1400000", 1_299_990..<size),
                ("bytes=7-99999999999999999999", 7..<size),
            ]
            for (header, range) in ranges {
                let part = try await AssetHTTP.download(url, on: server.baseURL, range: header)
                #expect(part.status == 206, "\(header)")
                // A Bool: a failed comparison of two large arrays would be diffed element by element.
                let sameBytes = part.body == Array(bytes[range])
                #expect(sameBytes, "\(header): \(part.body.count) bytes")
                #expect(
                    part.headers["content-range"] == "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)",
                    "\(header)")
            }
            // A range that holds no byte of the asset is refused.
            for header in ["bytes=\(size)-", "bytes=\(size + 10)-\(size + 20)", "bytes=-0", "bytes=\(size)-\(size)"] {
                let refused = try await AssetHTTP.download(url, on: server.baseURL, range: header)
                #expect(refused.status == 416, "\(header)")
                #expect(refused.serverErrorCode == "RANGE_NOT_SATISFIABLE", "\(header)")
                #expect(refused.headers["content-range"] == "bytes */\(size)", "\(header)")
            }
            // A range the server may ignore gets the whole asset.
            let several = try await AssetHTTP.download(url, on: server.baseURL, range: "bytes=0-1,5-6")
            #expect(several.status == 200 && several.body == bytes)
        }
    }

    @Test("a download opens the asset once, whole, by range or refused")
    func oneOpenPerDownload() async throws {
        let opened = Atomic<Int>(0)
        let wrap: @Sendable (CloudService) -> any CloudServing = { service in
            var wrapped = WrappedService(base: service)
            wrapped.downloadOpened = { opened.add(1, ordering: .relaxed) }
            return wrapped
        }
        try await HTTPTestServer.with(wrap: wrap) { server in
            let alice = RemoteCloudDatabase(
                configuration: RemoteCloudDatabase.Configuration(
                    baseURL: server.baseURL, container: server.container, scope: .private),
                credentials: .user(apiToken: server.apiToken, webAuthToken: server.webAuthToken))
            let bytes = AssetHTTP.randomBytes(1000)
            _ = try await AssetHTTP.savePhoto("photo", bytes: bytes, in: alice, on: server.baseURL)
            let fetched = try await alice.lookupRecords(["photo"], zoneID: .defaultZone, desiredKeys: nil)
            let url = try #require(AssetHTTP.downloadURL(of: fetched.first?.record))
            let cases: [(range: String?, status: Int, body: ArraySlice<UInt8>)] = [
                (nil, 200, bytes[...]), ("bytes=10-19", 206, bytes[10..<20]), ("bytes=0-", 206, bytes[...]),
                ("bytes=1000-", 416, []), ("bytes=0-1,5-6", 200, bytes[...]),
            ]
            for (index, item) in cases.enumerated() {
                let answer = try await AssetHTTP.download(url, on: server.baseURL, range: item.range)
                #expect(answer.status == item.status, "\(String(describing: item.range))")
                if item.status != 416 { #expect(answer.body == Array(item.body), "\(String(describing: item.range))") }
                #expect(opened.load(ordering: .relaxed) == index + 1, "\(String(describing: item.range))")
            }
        }
    }

    @Test(
        "a forged or expired download URL, and an unknown or expired upload URL, are refused",
        arguments: TestStore.available)
    func credentials(_ store: TestStore) async throws {
        try await Self.withServer(store) { server, clock in
            let alice = try await server.database(signedInAs: "alice")
            _ = try await AssetHTTP.savePhoto("photo", bytes: [1, 2, 3], in: alice, on: server.baseURL)
            let fetched = try await alice.lookupRecords(["photo"], zoneID: .defaultZone, desiredKeys: nil)
            let url = try #require(AssetHTTP.downloadURL(of: fetched.first?.record))
            let token = try #require(url.split(separator: "/").dropLast().last.map(String.init))

            // A signature changed, an id changed, a token that is no token: refused
            // alike, saying nothing of whether an asset exists.
            var forgedSignature = token
            forgedSignature.append(forgedSignature.removeLast() == "A" ? "B" : "A")
            let parts = token.split(separator: ".")
            let otherAsset = "someoneelsesasset." + parts.dropFirst().joined(separator: ".")
            for forged in [forgedSignature, otherAsset, "nonsense", "a.b.c"] {
                let answer = try await AssetHTTP.download(
                    url.replacingOccurrences(of: token, with: forged), on: server.baseURL)
                #expect(answer.status == 403 && answer.serverErrorCode == "ACCESS_DENIED", "\(forged)")
            }

            let targets = try await alice.requestAssetUploads(
                [AssetUploadRequest(recordName: "later", recordType: "Photo", fieldName: "image")], zoneID: .defaultZone
            )
            let ticketURL = try #require(targets.first?.url)
            let unknown = try await AssetHTTP.upload(
                [1], to: "/assets/1/upload/" + String(repeating: "x", count: 26), on: server.baseURL)
            #expect(unknown.status == 404 && unknown.serverErrorCode == "NOT_FOUND")

            clock.advance(by: 2 * 3600)
            let expiredDownload = try await AssetHTTP.download(url, on: server.baseURL)
            #expect(expiredDownload.status == 410 && expiredDownload.serverErrorCode == "EXPIRED")
            let expiredUpload = try await AssetHTTP.upload([1], to: ticketURL, on: server.baseURL)
            #expect(expiredUpload.status == 410 && expiredUpload.serverErrorCode == "EXPIRED")
            // The record fetched again has a URL that works.
            let again = try await alice.lookupRecords(["photo"], zoneID: .defaultZone, desiredKeys: nil)
            let fresh = try await AssetHTTP.download(
                try #require(AssetHTTP.downloadURL(of: again.first?.record)), on: server.baseURL)
            #expect(fresh.status == 200 && fresh.body == [1, 2, 3])
        }
    }

    @Test("an upload is bounded by the asset limit, not the JSON body limit")
    func assetLimitNotBodyLimit() async throws {
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.maximumBodySize = 10_000
        try await Self.withServer(
            .sqlite, configuration: configuration, assetSettings: AssetSettings(sizeLimit: 100_000)
        ) { server, _ in
            let alice = try await server.database(signedInAs: "alice")
            let bytes = AssetHTTP.randomBytes(100_000)
            let saved = try await AssetHTTP.savePhoto("photo", bytes: bytes, in: alice, on: server.baseURL)
            let downloaded = try await AssetHTTP.download(
                try #require(AssetHTTP.downloadURL(of: saved)), on: server.baseURL)
            #expect(downloaded.body == bytes)
        }
    }

    @Test("an upload over the limit is answered 413 before its body is read, or as soon as it grows over it")
    func oversizeUploads() async throws {
        try await Self.withServer(.sqlite, assetSettings: AssetSettings(sizeLimit: 100_000)) { server, _ in
            let alice = try await server.database(signedInAs: "alice")
            let targets = try await alice.requestAssetUploads(
                [
                    AssetUploadRequest(recordName: "one", recordType: "Photo", fieldName: "image"),
                    AssetUploadRequest(recordName: "two", recordType: "Photo", fieldName: "image"),
                ], zoneID: .defaultZone)
            let port = try #require(server.baseURL.port)

            // Only the head is sent: the answer cannot wait for the body.
            let declared = try await RawHTTPConnection.connect(port: port)
            try await declared.send(
                "POST \(URL(string: targets[0].url)!.path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100001\r\n\r\n"
            )
            let refused = try #require(try await declared.response(within: .seconds(5)))
            #expect(refused.isError(.limitExceeded, status: 413))
            #expect(try await declared.waitForClose(within: .seconds(5)))
            await declared.close()

            // A chunked body is refused once it passes the limit, before it ends.
            let chunked = try await RawHTTPConnection.connect(port: port)
            try await chunked.send(
                "POST \(URL(string: targets[1].url)!.path) HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            let chunk = Array("4000\r\n".utf8) + [UInt8](repeating: 7, count: 0x4000) + Array("\r\n".utf8)
            var sent = 0
            var answer: RawHTTPResponse?
            while answer == nil, sent < 20 {
                try? await chunked.send(chunk)
                sent += 1
                answer = try await chunked.response(within: .milliseconds(200))
            }
            let tooLarge = try #require(answer, "no answer after \(sent) chunks")
            #expect(tooLarge.isError(.limitExceeded, status: 413))
            // 100,000 bytes are 6.1 chunks of 16 KiB: refused at the 7th, or a little after.
            #expect(sent >= 7 && sent < 12, "\(sent) chunks sent")
            await chunked.close()
        }
    }

    @Test("a large upload on a slow link outlasts the body timeout; a stalled one does not")
    func slowUploads() async throws {
        var configuration = ServerConfiguration(port: 0, logger: quietLogger)
        configuration.requestBodyTimeout = .seconds(2)
        configuration.minimumBodyRate = 4096
        try await Self.withServer(.sqlite, configuration: configuration) { server, _ in
            let alice = try await server.database(signedInAs: "alice")
            let targets = try await alice.requestAssetUploads(
                [
                    AssetUploadRequest(recordName: "slow", recordType: "Photo", fieldName: "image"),
                    AssetUploadRequest(recordName: "stalled", recordType: "Photo", fieldName: "image"),
                ], zoneID: .defaultZone)
            let port = try #require(server.baseURL.port)

            // 128 KiB at about 40 KiB a second, ten times the minimum rate:
            // over three seconds, longer than the body timeout.
            let slow = try await RawHTTPConnection.connect(port: port)
            try await slow.send(
                "POST \(URL(string: targets[0].url)!.path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(128 * 1024)\r\n\r\n"
            )
            let began = ContinuousClock.now
            for index in 0..<32 {
                do {
                    try await slow.send([UInt8](repeating: 1, count: 4096))
                } catch {
                    Issue.record("cut after \(index) chunks, \(ContinuousClock.now - began): \(slow.unread)")
                    throw error
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(ContinuousClock.now - began > .seconds(2))
            let stored = try #require(try await slow.response(within: .seconds(5)))
            #expect(stored.status == 200, "\(String(decoding: stored.body, as: UTF8.self))")
            #expect((stored.json["singleFile"] as? [String: Any])?["size"] as? Int == 128 * 1024)
            await slow.close()

            // A body that stops coming is cut off a body timeout after its last bytes.
            let stalled = try await RawHTTPConnection.connect(port: port)
            try await stalled.send(
                "POST \(URL(string: targets[1].url)!.path) HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(128 * 1024)\r\n\r\n"
            )
            for _ in 0..<16 {
                try await stalled.send([UInt8](repeating: 1, count: 4096))
                try await Task.sleep(for: .milliseconds(100))
            }
            let stopped = ContinuousClock.now
            let cut = try #require(try await stalled.response(within: .seconds(10)))
            #expect(cut.status == 408)
            // Not the 16 seconds the bytes sent would have earned at the minimum rate.
            #expect(ContinuousClock.now - stopped < .seconds(5))
            await stalled.close()
        }
    }

    @Test("anyone may download a public record's asset; a participant a shared one", arguments: TestStore.available)
    func publicAndSharedReaders(_ store: TestStore) async throws {
        try await Self.withServer(store) { server, _ in
            let bytes = AssetHTTP.randomBytes(5000)
            let alicePublic = try await server.database(signedInAs: "alice", scope: .public)
            _ = try await AssetHTTP.savePhoto("poster", bytes: bytes, in: alicePublic, on: server.baseURL)
            let anonymous = RemoteCloudDatabase(
                configuration: RemoteCloudDatabase.Configuration(
                    baseURL: server.baseURL, container: server.container, scope: .public),
                credentials: .user(apiToken: server.apiToken, webAuthToken: nil))
            let poster = try await anonymous.lookupRecords(["poster"], zoneID: .defaultZone, desiredKeys: nil)
            let posterURL = try #require(AssetHTTP.downloadURL(of: poster.first?.record))
            #expect(try await AssetHTTP.download(posterURL, on: server.baseURL).body == bytes)

            // Alice shares an album holding a photo; Bob accepts and downloads it.
            let alice = try await server.database(signedInAs: "alice")
            let albums = ZoneID(zoneName: "Albums")
            _ = try await alice.modifyZones([.create(albums)])
            var photo = try await AssetHTTP.savePhoto("p1", bytes: bytes, in: alice, zoneID: albums, on: server.baseURL)
            var share = Record(recordType: ShareDetails.recordType, recordName: "share-p1", zoneID: albums)
            share.shareDetails = ShareDetails(publicPermission: .readOnly, participants: [])
            photo.share = "share-p1"
            let saved = try await alice.modifyRecords(
                [RecordOperation(.create, share), RecordOperation(.update, photo)], zoneID: albums, atomic: true)
            let shortGUID = try #require(saved.first?.record?.shareDetails?.shortGUID)
            let bobPublic = try await server.database(signedInAs: "bob", scope: .public)
            let accepted = try await bobPublic.acceptShares([ShareLookup(shortGUID: shortGUID)])
            guard case .share(let metadata) = try #require(accepted.first) else {
                Issue.record("accepting failed: \(accepted)")
                return
            }
            let bob = try await server.database(signedInAs: "bob", scope: .shared)
            let found = try await bob.lookupRecords(["p1"], zoneID: metadata.zoneID, desiredKeys: nil)
            let sharedURL = try #require(AssetHTTP.downloadURL(of: found.first?.record))
            let downloaded = try await AssetHTTP.download(sharedURL, on: server.baseURL)
            #expect(downloaded.status == 200 && downloaded.body == bytes)
        }
    }

    @Test("the request log never shows an upload ticket or a download token")
    func logLeavesCredentialsOut() async throws {
        let lines = LogLines()
        let configuration = ServerConfiguration(port: 0, logger: lines.logger())
        try await HTTPTestServer.with(configuration: configuration) { server in
            let alice = RemoteCloudDatabase(
                configuration: RemoteCloudDatabase.Configuration(
                    baseURL: server.baseURL, container: server.container, scope: .private),
                credentials: .user(apiToken: server.apiToken, webAuthToken: server.webAuthToken))
            let saved = try await AssetHTTP.savePhoto("photo", bytes: [1, 2, 3], in: alice, on: server.baseURL)
            let url = try #require(AssetHTTP.downloadURL(of: saved))
            #expect(try await AssetHTTP.download(url, on: server.baseURL).status == 200)
            let all = lines.all
            #expect(all.contains { $0.contains("POST /assets/1/upload/… 200 ") }, "\(all)")
            #expect(all.contains { $0.contains("GET /assets/1/download/…/file.bin 200 ") }, "\(all)")
        }
    }
}
