import ArgumentParser
import Cumulus
import CumulusServer
import Foundation
import Testing

@testable import cumulus

@Suite("cumulus issuer")
struct IssuerCommandTests {
    static let container = "iCloud.com.example.issuers"

    /// A data directory with the container, and a JWKS file of two keys.
    static func withData(_ body: (_ data: String, _ keySetFile: String) async throws -> Void) async throws {
        let directory = CumulusCommandTests.temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data").path
        try await CumulusCommandTests.createDatabase(data)
        _ = try await CumulusCommandTests.run(["container", "add", container, "--data", data])
        let file = directory.appendingPathComponent("jwks.json")
        try TestSigningKey.keySet([TestSigningKey.sharedRSA[0], TestSigningKey.es256(keyID: "ec")]).write(
            to: file, atomically: true, encoding: .utf8)
        try await body(data, file.path)
    }

    @Test("issuer add stores a JWKS file or a URL, list shows each issuer, remove takes one away")
    func addListRemove() async throws {
        try await Self.withData { data, file in
            let apple = "https://appleid.apple.com"
            let added = try await CumulusCommandTests.run([
                "issuer", "add", "--container", Self.container, "--issuer", apple, "--audience", "com.example.notes",
                "--audience", "com.example.notes.watch", "--jwks-file", file, "--data", data,
            ])
            #expect(added.last?.contains("2 keys stored") == true, "\(added)")
            var listed = try await CumulusCommandTests.run([
                "issuer", "list", "--container", Self.container, "--data", data,
            ])
            #expect(listed == ["\(apple)\taudiences: com.example.notes, com.example.notes.watch\tstored keys"])

            // Again for the same issuer: its settings are replaced.
            _ = try await CumulusCommandTests.run([
                "issuer", "add", "--container", Self.container, "--issuer", apple, "--audience", "com.example.notes",
                "--jwks-url", "https://appleid.apple.com/auth/keys", "--data", data,
            ])
            _ = try await CumulusCommandTests.run([
                "issuer", "add", "--container", Self.container, "--issuer", "https://accounts.example.com",
                "--audience", "client", "--jwks-file", file, "--data", data,
            ])
            listed = try await CumulusCommandTests.run([
                "issuer", "list", "--container", Self.container, "--data", data,
            ])
            #expect(
                listed == [
                    "https://accounts.example.com\taudiences: client\tstored keys",
                    "\(apple)\taudiences: com.example.notes\tkeys from https://appleid.apple.com/auth/keys",
                ])

            let removed = try await CumulusCommandTests.run([
                "issuer", "remove", "--container", Self.container, "--issuer", apple, "--data", data,
            ])
            #expect(removed.last?.contains("no longer") == true)
            listed = try await CumulusCommandTests.run([
                "issuer", "list", "--container", Self.container, "--data", data,
            ])
            #expect(listed.count == 1 && listed[0].hasPrefix("https://accounts.example.com"))
            await #expect(throws: ValidationError.self) {
                _ = try await CumulusCommandTests.run([
                    "issuer", "remove", "--container", Self.container, "--issuer", apple, "--data", data,
                ])
            }
            let empty = try await CumulusCommandTests.run(["issuer", "list", "--container", "other", "--data", data])
            #expect(empty == ["other has no issuers."])
        }
    }

    @Test("issuer add refuses bad options, files and URLs with a clear error and stores nothing")
    func refusals() async throws {
        try await Self.withData { data, file in
            let directory = URL(fileURLWithPath: file).deletingLastPathComponent()
            let privateFile = directory.appendingPathComponent("private.json").path
            try #"{"keys":[{"kty":"EC","crv":"P-256","kid":"p","x":"AA","y":"AA","d":"AA"}]}"#.write(
                toFile: privateFile, atomically: true, encoding: .utf8)
            let notJSON = directory.appendingPathComponent("not.json").path
            try "hello".write(toFile: notJSON, atomically: true, encoding: .utf8)
            let base = ["issuer", "add", "--container", Self.container, "--issuer", "https://i.example.com"]
            let refused: [[String]] = [
                base + ["--jwks-file", file],
                base + ["--audience", "a"],
                base + ["--audience", "a", "--jwks-file", file, "--jwks-url", "https://k.example.com"],
                base + ["--audience", "a", "--jwks-file", directory.appendingPathComponent("none.json").path],
                base + ["--audience", "a", "--jwks-file", notJSON],
                base + ["--audience", "a", "--jwks-file", privateFile],
                base + ["--audience", "a", "--jwks-url", "http://keys.example.com/jwks"],
                base + ["--audience", "", "--jwks-file", file],
                [
                    "issuer", "add", "--container", Self.container, "--issuer", "a\u{0}b", "--audience", "a",
                    "--jwks-file", file,
                ],
            ]
            for arguments in refused {
                await #expect(throws: (any Error).self, "\(arguments)") {
                    _ = try await CumulusCommandTests.run(arguments + ["--data", data])
                }
            }
            await #expect(throws: CloudError.self) {
                _ = try await CumulusCommandTests.run([
                    "issuer", "add", "--container", "unknown", "--issuer", "i", "--audience", "a", "--jwks-file", file,
                    "--data", data,
                ])
            }
            let listed = try await CumulusCommandTests.run([
                "issuer", "list", "--container", Self.container, "--data", data,
            ])
            #expect(listed == ["\(Self.container) has no issuers."])
        }
    }

    @Test("issuer add, list and remove work on --postgres", .enabled(if: PostgresTestDatabase.isEnabled))
    func postgres() async throws {
        try await PostgresTestDatabase.with { url in
            let text = "postgres://\(url.username)@\(url.host):\(url.port)/\(url.database)?sslmode=disable"
            _ = try await CumulusCommandTests.run(["container", "add", Self.container, "--postgres", text])
            _ = try await CumulusCommandTests.run([
                "issuer", "add", "--container", Self.container, "--issuer", "https://appleid.apple.com", "--audience",
                "com.example.notes", "--jwks-url", "https://appleid.apple.com/auth/keys", "--postgres", text,
            ])
            let listed = try await CumulusCommandTests.run([
                "issuer", "list", "--container", Self.container, "--postgres", text,
            ])
            #expect(listed.count == 1 && listed[0].hasPrefix("https://appleid.apple.com\t"))
            _ = try await CumulusCommandTests.run([
                "issuer", "remove", "--container", Self.container, "--issuer", "https://appleid.apple.com",
                "--postgres", text,
            ])
            let service = try await CloudService.open(postgres: url, logger: quietLogger)
            #expect(try await service.identityIssuers(container: Self.container).isEmpty)
            try await service.close()
        }
    }
}
