import Cumulus
import CumulusCrypto
import CumulusServer
import Foundation
import Synchronization
import Testing

/// A note whose body the server must never read, with a draft that never
/// leaves the device.
struct SecretNote: CloudCodable, Identifiable {
    var id: String
    var title: String
    var body: String
    var draft: String? = nil
    var cloudMetadata: RecordMetadata?
    static var cloudEncryptedFields: Set<String> { ["body"] }
    static var cloudLocalFields: Set<String> { ["draft"] }
}

/// Keeps the body of every request it sends.
final class RecordingTransport: CloudTransport {
    private let base = URLSessionTransport()
    private let bodies = Mutex<[[UInt8]]>([])

    var sent: [[UInt8]] { bodies.withLock { $0 } }

    func send(_ request: CloudHTTPRequest) async throws -> CloudHTTPResponse {
        bodies.withLock { $0.append(request.body ?? []) }
        return try await base.send(request)
    }
}

@Suite("Encrypted and local-only fields over HTTP")
struct EncryptedFieldsOverHTTPTests {
    static let secret = "SECRET-MARKER-9d2e"
    static let clear = "CLEAR-MARKER-41b7"
    static let local = "LOCAL-MARKER-c603"

    @Test(
        "no request body, no byte of the store and no PostgreSQL row holds an encrypted or a local field",
        arguments: TestStore.single)
    func noPlaintextAnywhere(store: TestStore) async throws {
        let server = try await RunningServer.start(store: store)
        do {
            let keys = StaticFieldKeys(current: AESGCMFieldCipher.makeKey(identifier: "k1"))
            var configuration = SyncConfiguration(automaticSync: false)
            configuration.fieldEncryption = FieldEncryption(cipher: AESGCMFieldCipher(), keys: keys)
            let transport = RecordingTransport()
            let phone = try await SyncEngine<SecretNote>(
                database: try await server.database(signedInAs: "alice", transport: transport),
                directory: Self.directory(), configuration: configuration)
            try await phone.upload(SecretNote(id: "n1", title: Self.clear, body: "\(Self.secret) one"))
            try await phone.sync()
            var note = try #require(await phone.model(withIdentifier: "n1"))
            note.body = "\(Self.secret) two"
            note.draft = "\(Self.local) draft"
            try await phone.upload(note)
            try await phone.sync()
            #expect(await phone.model(withIdentifier: "n1")?.draft == "\(Self.local) draft")

            let laptop = try await SyncEngine<SecretNote>(
                database: try await server.database(signedInAs: "alice"), directory: Self.directory(),
                configuration: configuration)
            try await laptop.sync()
            #expect(await laptop.model(withIdentifier: "n1")?.body == "\(Self.secret) two")
            #expect(await laptop.model(withIdentifier: "n1")?.draft == nil)
            // Another device's edit arrives on the phone with the draft kept.
            var renamed = try #require(await laptop.model(withIdentifier: "n1"))
            renamed.title = "\(Self.clear) renamed"
            try await laptop.upload(renamed)
            try await laptop.sync()
            try await phone.sync()
            let arrived = try #require(await phone.model(withIdentifier: "n1"))
            #expect(arrived.title == "\(Self.clear) renamed" && arrived.draft == "\(Self.local) draft")

            let bodies = transport.sent.map { String(decoding: $0, as: UTF8.self) }
            #expect(bodies.contains { $0.contains(Self.clear) }, "the search finds what is sent in clear")
            #expect(!bodies.contains { $0.contains(Self.secret) || $0.contains(Self.local) })

            let stored = try await Self.storedText(of: server, store: store)
            #expect(Self.holds(stored, Self.clear), "the search finds what is stored in clear")
            #expect(!Self.holds(stored, Self.secret))
            #expect(!Self.holds(stored, Self.local))
            await phone.close()
            await laptop.close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Every byte the store keeps: SQLite's files (the database, its WAL),
    /// or a plain `pg_dump` of the PostgreSQL database.
    static func storedText(of server: RunningServer, store: TestStore) async throws -> String {
        guard let database = server.stores.database else {
            var bytes: [UInt8] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: server.directory.path) {
                let path = server.directory.appendingPathComponent(name).path
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
                else { continue }
                bytes += try Data(contentsOf: URL(fileURLWithPath: path))
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        let dump = server.directory.appendingPathComponent("dump.sql").path
        var connection = "postgresql://\(database.username)"
        if let password = database.password { connection += ":\(password)" }
        connection += "@\(database.host):\(database.port)/\(database.database)"
        try await PostgresCluster.run([
            "\(PostgresCluster.binaries ?? "")/pg_dump", "--format=plain", "--file=\(dump)", "--dbname=\(connection)",
        ])
        return try String(contentsOfFile: dump, encoding: .utf8)
    }

    /// Whether `text` holds `marker` as text or, as a dump shows `bytea`
    /// columns, as the hex of its bytes.
    static func holds(_ text: String, _ marker: String) -> Bool {
        text.contains(marker) || text.contains(marker.utf8.map { String(format: "%02x", $0) }.joined())
    }

    static func directory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-secret-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
