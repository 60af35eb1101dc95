import Cumulus
import CumulusServer
import Foundation
import Logging

#if canImport(Glibc)
    /// glibc's `malloc_trim`, which the Glibc module does not export (`malloc.h`).
    @_silgen_name("malloc_trim")
    private func releaseFreedMemory(_ pad: Int) -> Int32
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Uploads and downloads of 1, 10 and 50 MB assets over HTTP to the server
/// on SQLite, through `RemoteCloudDatabase` and through `curl` sending the
/// same bytes to the same URLs (the floor), with the server's resident
/// memory: the server runs in a child process of its own (this executable,
/// `asset-server-child`), a fresh one for each size, so that its `VmHWM`
/// is that size's peak alone.
enum AssetTransfer {
    static let childCommand = "asset-server-child"

    /// One size's figures, in seconds (the median of the runs) and KiB.
    struct Figures {
        var megabytes: Int
        var clientUpload: Double
        var curlUpload: Double
        var clientDownload: Double
        var curlDownload: Double
        var serverStartKiB: Int
        var serverPeakKiB: Int
        /// The most this process grew during an upload, over its resident size before.
        var clientUploadGrowthKiB: Int
        /// The same for a download read at some 10 MB/s, far below the network's pace.
        var slowReadGrowthKiB: Int
        /// The download and the slow read as one request (no download window): the client before windows.
        var oneRequestDownload: Double
        var oneRequestSlowReadGrowthKiB: Int
        /// The same download by `URLSession` alone (`data(from:)`): FoundationNetworking's own pace.
        var urlSessionDownload: Double
    }

    /// Starts the count of this process's peak resident size (`VmHWM`)
    /// afresh, after handing freed memory back to the system: memory malloc
    /// kept from an earlier transfer would hide a later one's.
    static func resetPeak() {
        #if canImport(Glibc)
            _ = releaseFreedMemory(0)
        #endif
        try? Data("5".utf8).write(to: URL(fileURLWithPath: "/proc/self/clear_refs"))
    }

    /// How far this process's peak rose over `before` since the last ``resetPeak()``.
    static func growth(since before: MemoryStatus) -> Int {
        max(0, MemoryStatus.read().peak - before.rss)
    }

    // MARK: Parent

    static func measure(megabytes: Int, runs: Int) async throws -> Figures {
        let server = try ChildServer.start()
        defer { server.stop() }
        let database = RemoteCloudDatabase(
            configuration: RemoteCloudDatabase.Configuration(baseURL: server.baseURL, container: server.container),
            credentials: .user(apiToken: server.apiToken, webAuthToken: server.userToken))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-asset-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        var generator = SystemRandomNumberGenerator()
        let size = megabytes << 20
        try Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: file)
        let started = server.memory()

        var clientUploads: [Double] = []
        var curlUploads: [Double] = []
        var clientDownloads: [Double] = []
        var curlDownloads: [Double] = []
        var uploadGrowth = 0
        var slowGrowth = 0
        var oneRequestDownloads: [Double] = []
        var oneRequestSlowGrowth = 0
        var urlSessionDownloads: [Double] = []
        var whole = database.configuration
        whole.downloadWindow = .max
        let oneRequest = RemoteCloudDatabase(
            configuration: whole, credentials: .user(apiToken: server.apiToken, webAuthToken: server.userToken))
        for run in 0..<runs {
            let name = "photo-\(run)"
            let targets = try await database.requestAssetUploads(
                [
                    AssetUploadRequest(recordName: name, recordType: "Photo", fieldName: "image"),
                    AssetUploadRequest(recordName: name + "-curl", recordType: "Photo", fieldName: "image"),
                ], zoneID: .defaultZone)
            let clock = ContinuousClock()
            resetPeak()
            let beforeUpload = MemoryStatus.read()
            let begin = clock.now
            let asset = try await database.uploadAsset(contentsOf: file, to: targets[0])
            clientUploads.append((clock.now - begin).seconds)
            uploadGrowth = max(uploadGrowth, growth(since: beforeUpload))
            guard asset.size == Int64(size) else {
                throw CloudError(.internalError, reason: "the upload stored \(asset.size ?? -1) bytes of \(size)")
            }
            curlUploads.append(
                try curl(
                    [
                        "-H", "Expect:", "-H", "Content-Type: application/octet-stream", "--data-binary",
                        "@\(file.path)",
                    ],
                    url: server.url(targets[1].url)))

            let record = Record(
                recordType: "Photo", recordName: name, zoneID: .defaultZone, fields: ["image": .asset(asset)])
            let saved = try await database.modifyRecords(
                [RecordOperation(.create, record)], zoneID: .defaultZone, atomic: true)
            guard case .asset(let stored)? = saved.first?.record?["image"], let url = stored.downloadURL else {
                throw CloudError(.internalError, reason: "the saved record has no download URL")
            }
            clientDownloads.append(try await timedDownload(stored, from: database, size: size))
            oneRequestDownloads.append(try await timedDownload(stored, from: oneRequest, size: size))
            urlSessionDownloads.append(
                try await urlSessionDownload(server.url(url.replacingOccurrences(of: "${f}", with: "photo.bin")), size))
            curlDownloads.append(try curl([], url: server.url(url.replacingOccurrences(of: "${f}", with: "photo.bin"))))

            slowGrowth = max(slowGrowth, try await slowReadGrowth(stored, from: database))
            oneRequestSlowGrowth = max(oneRequestSlowGrowth, try await slowReadGrowth(stored, from: oneRequest))
        }
        return Figures(
            megabytes: megabytes, clientUpload: median(clientUploads), curlUpload: median(curlUploads),
            clientDownload: median(clientDownloads), curlDownload: median(curlDownloads),
            serverStartKiB: started.rss, serverPeakKiB: server.memory().peak, clientUploadGrowthKiB: uploadGrowth,
            slowReadGrowthKiB: slowGrowth, oneRequestDownload: median(oneRequestDownloads),
            oneRequestSlowReadGrowthKiB: oneRequestSlowGrowth, urlSessionDownload: median(urlSessionDownloads))
    }

    /// Seconds for an ephemeral `URLSession` to read `address` whole into memory.
    static func urlSessionDownload(_ address: String, _ size: Int) async throws -> Double {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let clock = ContinuousClock()
        let begin = clock.now
        let (data, _) = try await session.data(from: URL(string: address)!)
        guard data.count == size else {
            throw CloudError(.internalError, reason: "URLSession read \(data.count) bytes of \(size)")
        }
        return (clock.now - begin).seconds
    }

    /// Seconds to read the whole asset from `database`.
    static func timedDownload(_ asset: Asset, from database: RemoteCloudDatabase, size: Int) async throws -> Double {
        let clock = ContinuousClock()
        let begin = clock.now
        var received = 0
        for try await chunk in try await database.downloadAsset(asset, range: nil) { received += chunk.count }
        guard received == size else {
            throw CloudError(.internalError, reason: "the download gave \(received) bytes of \(size)")
        }
        return (clock.now - begin).seconds
    }

    /// How far this process grows while it reads the asset at 100 ms a
    /// megabyte: some 10 MB/s, far below loopback's pace.
    static func slowReadGrowth(_ asset: Asset, from database: RemoteCloudDatabase) async throws -> Int {
        resetPeak()
        let before = MemoryStatus.read()
        var unpaused = 0
        for try await chunk in try await database.downloadAsset(asset, range: nil) {
            unpaused += chunk.count
            if unpaused >= 1 << 20 {
                unpaused = 0
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        return growth(since: before)
    }

    /// Runs `curl` on `url`, the body thrown away; throws unless it answers 200.
    /// Runs `curl` and returns the transfer's seconds as curl itself
    /// measures them (`time_total`): its process start is not the server's.
    static func curl(_ arguments: [String], url: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}"] + arguments + [url]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let answer = String(decoding: data, as: UTF8.self).split(separator: " ")
        guard process.terminationStatus == 0, answer.count == 2, answer[0] == "200", let seconds = Double(answer[1])
        else {
            throw CloudError(
                .internalError, reason: "curl \(url) answered \(answer) (\(process.terminationStatus))")
        }
        return seconds
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// A `cumulus`-like server in a child process: this executable running
    /// ``child(_:)`` on a SQLite store in a temporary directory.
    final class ChildServer {
        let process: Process
        let baseURL: URL
        let container: String
        let apiToken: String
        let userToken: String
        let directory: URL

        private init(
            process: Process, baseURL: URL, container: String, apiToken: String, userToken: String, directory: URL
        ) {
            self.process = process
            self.baseURL = baseURL
            self.container = container
            self.apiToken = apiToken
            self.userToken = userToken
            self.directory = directory
        }

        static func start() throws -> ChildServer {
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("cumulus-asset-figures-\(UUID().uuidString)", isDirectory: true)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = [childCommand, directory.path]
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = Pipe()
            try process.run()
            // The child prints one line once it listens: port, container and tokens.
            var text = ""
            while !text.contains("\n") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            let parts = text.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            guard parts.count == 5, parts[0] == "READY", let port = Int(parts[1]) else {
                process.terminate()
                throw CloudError(.internalError, reason: "the asset server child did not start: \(text)")
            }
            return ChildServer(
                process: process, baseURL: URL(string: "http://127.0.0.1:\(port)")!, container: parts[2],
                apiToken: parts[3], userToken: parts[4], directory: directory)
        }

        /// An asset URL (a path on the server) as an absolute URL.
        func url(_ path: String) -> String {
            path.hasPrefix("/") ? baseURL.absoluteString + path : path
        }

        /// The child's resident memory now and at its peak.
        func memory() -> MemoryStatus {
            MemoryStatus.read(path: "/proc/\(process.processIdentifier)/status")
        }

        func stop() {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    // MARK: Child

    /// The child's entry point: `asset-server-child <directory>`. Serves a
    /// fresh SQLite store in `directory` with one container and user until
    /// it is terminated.
    static func child(_ arguments: [String]) async throws {
        guard arguments.count == 1 else {
            throw CloudError(.badRequest, reason: "usage: \(childCommand) <directory>")
        }
        let directory = URL(fileURLWithPath: arguments[0], isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let logger = Logger(label: "figures") { _ in SwiftLogNoOpLogHandler() }
        let service = try await CloudService.open(
            path: directory.appendingPathComponent("cumulus.sqlite").path, logger: logger)
        let container = "iCloud.com.example.assets"
        let apiToken = try await service.addContainer(named: container)
        let user = try await service.addUser(named: "bench", container: container)
        var configuration = ServerConfiguration(port: 0, logger: logger)
        // The figures measure the server, not its request limits.
        configuration.rateLimits = .unlimited
        let server = CumulusHTTPServer(service: service, configuration: configuration)
        try await server.runUntilTerminated { port in
            print("READY \(port) \(container) \(apiToken) \(user.webAuthToken)")
        }
        try await service.close()
    }
}
