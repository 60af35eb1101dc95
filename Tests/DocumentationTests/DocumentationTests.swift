import Cumulus
import Foundation
import Testing

/// Runs the documents' snippets that stand on their own; the others (an
/// engine syncing in the background, a directory in Application Support)
/// are only compiled.
@Suite("Documentation snippets")
struct DocumentationTests {
    @Test("the README's quick start gives the record it describes, and decodes it back")
    func quickStart() async throws {
        let (record, back) = try await READMESnippets.quickStart()
        #expect(record.recordType == "Landmark")
        #expect(record.recordName == back.cloudIdentifier)
        #expect(record["name"] == .string("Golden Gate Bridge"))
        #expect(record["tags"] == .stringList(["bridge"]))
        #expect(record["visited"] == nil)
        #expect(record.metadata == nil)
        #expect(back.name == "Golden Gate Bridge")
        #expect(back.tags == ["bridge"])
        #expect(back.visited == nil)
    }

    @Test("the README's engines: a landmark uploaded on the phone arrives in the laptop's changes")
    func changeArriving() async throws {
        #expect(try await READMESnippets.changeArriving() == ["Ferry Building"])
    }

    @Test("CloudCodable's module page: a note becomes a record and comes back")
    func roundTrip() async throws {
        let (record, note) = try await CloudCodableSnippets.roundTrip()
        #expect(record.recordType == "Note")
        #expect(record["title"] == .string("Groceries"))
        #expect(note.title == "Groceries")
        #expect(note.cloudIdentifier == record.recordName)
    }

    @Test("the field mapping article: each property becomes the field the table gives, and decodes back")
    func fieldMapping() async throws {
        let (record, back) = try await HowValuesMapToFieldsSnippets.fields()
        #expect(record["mode"] == .string("ferry"))
        #expect(record["days"] == .int64(2))
        #expect(record["booked"] == .int64(1))
        #expect(record["distance"] == .double(12.5))
        #expect(record["start"]?.type == .timestamp)
        if case .timestamp(let start) = record["start"] {
            #expect((start.timeIntervalSince1970 * 1000).rounded() == 1_767_225_600_123)
        }
        #expect(record["tags"] == .stringList(["bay", "sea"]))
        #expect(record["stops"] == .bytes(Data(#"[{"minutes":20,"name":"Pier 39"}]"#.utf8)))
        #expect(record["note"] == nil)
        #expect(back.stops == [HowValuesMapToFieldsSnippets.Trip.Stop(name: "Pier 39", minutes: 20)])
        #expect(back.tags == ["bay", "sea"])
        #expect((back.start.timeIntervalSince1970 * 1000).rounded() == 1_767_225_600_123)
    }

    @Test("the text merging article: both devices end with both edits of the caption")
    func mergingText() async throws {
        let (onPhone, onLaptop) = try await MergingTextSnippets.captions()
        #expect(onPhone == "Sunrise over the old bay\nFrom the north pier")
        #expect(onLaptop == onPhone)
    }

    @Test("the duplicates article: two devices create the tag offline and both end with one tag holding both fields")
    func avoidingDuplicates() async throws {
        let (onPhone, onLaptop) = try await AvoidingDuplicatesSnippets.tags()
        for tags in [onPhone, onLaptop] {
            #expect(tags.count == 1)
            #expect(tags.first?.name == "work")
            #expect(tags.first?.color == "red")
            #expect(tags.first?.noteCount == 3)
        }
    }

    @Test("the sharing article: alice shares an album with bob, by address, and carol; bob accepts, syncs and leaves")
    func sharingArticle() async throws {
        let share = try await SharingSnippets.sharing()
        #expect(share.title == "Trip")
        #expect(share.shortGUID != nil)
        #expect(share.participants.map(\.role) == [.owner, .user, .user])
        #expect(share.participants.map(\.permission) == [.readWrite, .readWrite, .readOnly])
        #expect(share.ownerName?.displayName == "Alice Example")
    }

    @Test("the references article: deleting the album deletes its clipping on the clippings' engine")
    func referencesArticle() async throws {
        let left = try await ReferencesSnippets.references()
        #expect(left.isEmpty)
    }

    @Test("the photos article: the tablet downloads the picture's bytes; deleting the album deletes the photo")
    func photosArticle() async throws {
        let (received, left) = try await PhotosAndFilesSnippets.photos()
        #expect(received == Data((0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }))
        #expect(left.isEmpty)
    }

    @Test("the public database article: a visitor reads alice's notice; bob's edit of it is refused")
    func publicDatabaseArticle() async throws {
        let (seen, refused) = try await PublicDatabaseSnippets.board()
        #expect(seen == ["Open on Sunday"])
        #expect(refused?.code == .accessDenied)
    }

    @Test("CumulusTesting's example: the phone's note reaches the laptop after two throttled saves")
    func twoDevices() async throws {
        let notes = try await CumulusTestingSnippets.twoDevices()
        #expect(notes.map(\.title) == ["Groceries"])
        #expect(notes.first?.cloudMetadata != nil)
    }

    @Test("CumulusTesting's production schema: a developer's engine teaches development what production gets")
    func productionSchema() async throws {
        // The note's id and title, and the engine's write lineage.
        #expect(try await CumulusTestingSnippets.productionSchema() == 3)
    }

    @Test("the models article: each version reads the others' records; a default and a coding key do their part")
    func modelVersions() async throws {
        let (upgraded, older, pinned, heading) = try await EvolvingYourModelsSnippets.versions()
        #expect(upgraded.title == "Shopping")
        #expect(upgraded.rating == nil)
        #expect(older.title == "Films")
        #expect(pinned == false)
        #expect(heading == "Shopping")
    }

    @Test("the models article: version 1 edits a note's title and version 2's rating stays")
    func mixedVersions() async throws {
        let rating = try await EvolvingYourModelsSnippets.mixedVersions()
        #expect(rating == 5)
    }
}
