import Cumulus
import CumulusServer
import Foundation
import Testing

@Suite("container names")
struct ContainerNameTests {
    static let refused = [
        "", "not a container!", "a\u{0}b", "caf\u{E9}", "iCloud.caf\u{E9}", ".hidden", "-flag", "a/b", "a%2Fb",
        "a b", "tab\there", String(repeating: "a", count: NameRules.containerNameLimit + 1),
    ]
    static let accepted = [
        "iCloud.com.example.notes", "c", "A-b_c.9", "9lives",
        String(repeating: "a", count: NameRules.containerNameLimit),
    ]

    @Test("the rule takes ASCII letters, digits, '.', '-' and '_', first a letter or digit, at most the limit")
    func rule() {
        for name in Self.accepted {
            #expect(throws: Never.self, "\(name)") { try NameRules.checkNewContainerName(name) }
        }
        for name in Self.refused {
            #expect(throws: CloudError.self, "\(name.debugDescription)") { try NameRules.checkNewContainerName(name) }
        }
    }

    @Test(
        "addContainer refuses odd names with BAD_REQUEST naming the rule, creates nothing, and counts",
        arguments: TestStore.single)
    func addContainer(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-names-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await store.makeServices(directory: directory)
        do {
            let service = stores.services[0]
            #expect(try await service.containerCount() == 0)
            for name in Self.refused {
                do {
                    _ = try await service.addContainer(named: name)
                    Issue.record("\(name.debugDescription) was accepted")
                } catch let error as CloudError {
                    #expect(error.code == .badRequest, "\(name.debugDescription)")
                    #expect(error.reason.contains("container name"), "\(error.reason)")
                }
            }
            #expect(try await service.containerCount() == 0)
            for name in Self.accepted { _ = try await service.addContainer(named: name) }
            #expect(try await service.containerCount() == Self.accepted.count)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }

    @Test("a container created before the rule keeps working", arguments: TestStore.single)
    func existingContainer(_ store: TestStore) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cumulus-names-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try await store.makeServices(directory: directory)
        do {
            let service = stores.services[0]
            let old = "old container!"
            let created = try await service.storage.write { try await $0.createContainer(named: old, tokenHash: "h") }
            #expect(created)
            let user = try await service.addUser(named: "alice", container: old)
            #expect(try await service.user(container: old, webAuthToken: user.webAuthToken) != nil)
            #expect(try await service.containerCount() == 1)
        } catch {
            await stores.close()
            throw error
        }
        await stores.close()
    }
}
