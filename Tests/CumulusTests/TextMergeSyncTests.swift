import CumulusTesting
import Foundation
import Testing

@testable import Cumulus

/// A photo caption that merges as text.
struct Caption: CloudCodable, Identifiable, Hashable {
    static var cloudTextMergedFields: Set<String> { ["caption"] }
    var id: String
    var caption: String
    var cloudMetadata: RecordMetadata?
}

/// The same caption without the opt-in: today's field-level merge.
struct PlainCaption: CloudCodable, Identifiable, Hashable {
    static var cloudRecordType: String { "Caption" }
    var id: String
    var caption: String
    var cloudMetadata: RecordMetadata?
}

/// Issue #36, part 3: two devices edit one caption offline, both sync.
@Suite("Text merged through the engine", .timeLimit(.minutes(1)))
struct TextMergeSyncTests {
    static let original = "Sunset over the bay\nTaken from the pier\n"
    static let phoneEdit = "Sunset over the old bay\nTaken from the pier\n"
    static let laptopEdit = "Sunrise over the bay\nTaken from the north pier\n"

    let devices = VersionedDevices(recordType: "Caption")

    /// Two devices holding the synced original; each then edits it offline
    /// with `edit`, the phone syncs first and the laptop second (its change
    /// meets the phone's on the server), then the phone fetches. Returns
    /// both devices' captions and the laptop's events.
    func editOnBoth<Model: CloudCodable & Identifiable>(
        _ type: Model.Type, make: (String) -> Model, edit: (Model, String) -> Model, caption: (Model) -> String
    ) async throws -> (phone: String, laptop: String, events: [SyncEvent]) where Model.ID == String {
        let phone = try await devices.engine(type)
        let laptop = try await devices.engine(type)
        try await phone.upload(make(Self.original))
        try await phone.sync()
        try await laptop.sync()
        let onPhone = try #require(await phone.model(withIdentifier: "p"))
        let onLaptop = try #require(await laptop.model(withIdentifier: "p"))
        #expect(caption(onLaptop) == Self.original)

        try await phone.upload(edit(onPhone, Self.phoneEdit))
        try await laptop.upload(edit(onLaptop, Self.laptopEdit))
        let events = Collected(laptop.events)
        try await phone.sync()
        try await laptop.sync()
        try await phone.sync()
        #expect(await phone.pendingChangeCount == 0)
        #expect(await laptop.pendingChangeCount == 0)
        _ = await events.waitUntil { $0.contains { if case .conflict = $0 { true } else { false } } }
        let phoneModel = try #require(await phone.model(withIdentifier: "p"))
        let laptopModel = try #require(await laptop.model(withIdentifier: "p"))
        await phone.close()
        await laptop.close()
        return (caption(phoneModel), caption(laptopModel), events.values)
    }

    @Test("both devices end with both edits of a caption merged as text")
    func bothEditsSurvive() async throws {
        let (phone, laptop, events) = try await editOnBoth(
            Caption.self, make: { Caption(id: "p", caption: $0) },
            edit: { model, text in
                var model = model
                model.caption = text
                return model
            }, caption: \.caption)
        let merged = "Sunrise over the old bay\nTaken from the north pier\n"
        #expect(phone == merged)
        #expect(laptop == merged)
        try await devices.expectServerFields("p", ["id": .string("p"), "caption": .string(merged)])
        #expect(
            events.contains { if case .conflict(recordName: "p", resolution: .resolved) = $0 { true } else { false } })
        #expect(!events.contains { if case .mergedWithoutAncestor = $0 { true } else { false } })
    }

    @Test("a caption not opted in keeps the field-level merge: the later device's text wins")
    func notOptedIn() async throws {
        let (phone, laptop, _) = try await editOnBoth(
            PlainCaption.self, make: { PlainCaption(id: "p", caption: $0) },
            edit: { model, text in
                var model = model
                model.caption = text
                return model
            }, caption: \.caption)
        #expect(phone == Self.laptopEdit)
        #expect(laptop == Self.laptopEdit)
        try await devices.expectServerFields("p", ["id": .string("p"), "caption": .string(Self.laptopEdit)])
    }
}
