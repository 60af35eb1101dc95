import Foundation
import Testing

@testable import CloudCodable

@Suite("RecordFields")
struct RecordFieldsTests {
    @Test("reads and writes like a dictionary")
    func dictionaryLike() {
        var fields: RecordFields = ["a": .int64(1), "b": .string("x")]
        #expect(fields.count == 2)
        #expect(fields["a"] == .int64(1))
        #expect(fields["missing"] == nil)
        fields["a"] = .int64(2)
        #expect(fields["a"] == .int64(2))
        #expect(fields.count == 2)
        fields["c"] = .double(1)
        #expect(fields.keys == ["a", "b", "c"])
        fields["b"] = nil
        #expect(fields.keys == ["a", "c"])
        #expect(fields.removeValue(forKey: "zzz") == nil)
        #expect(fields.updateValue(.int64(3), forKey: "a") == .int64(2))
        var seen: [String: FieldValue] = [:]
        for (key, value) in fields { seen[key] = value }
        #expect(seen == ["a": .int64(3), "c": .double(1)])
        #expect(fields.dictionary == seen)
        #expect(RecordFields(seen) == fields)
    }

    @Test("equality and hashing ignore order")
    func unordered() {
        let one: RecordFields = ["a": .int64(1), "b": .int64(2)]
        let two: RecordFields = ["b": .int64(2), "a": .int64(1)]
        #expect(one == two)
        #expect(one.hashValue == two.hashValue)
        #expect(one != ["a": .int64(1), "b": .int64(3)])
        #expect(one != ["a": .int64(1)])
        #expect(one != ["a": .int64(1), "c": .int64(2)])
        #expect(Set([one, two]).count == 1)
    }

    @Test("a literal that repeats a name keeps the last value")
    func repeatedLiteral() {
        let fields: RecordFields = ["a": .int64(1), "a": .int64(2)]
        #expect(fields.count == 1)
        #expect(fields["a"] == .int64(2))
    }

    @Test("large field sets stay consistent across the index threshold")
    func largeFieldSets() {
        var fields = RecordFields()
        var mirror: [String: FieldValue] = [:]
        var generator = WireRandom(seed: 7)
        for step in 0..<2_000 {
            let key = "f\(generator.next() % 80)"
            if generator.next() % 3 == 0 {
                #expect(fields.removeValue(forKey: key) == mirror.removeValue(forKey: key))
            } else {
                let value = FieldValue.int64(Int64(step))
                #expect(fields.updateValue(value, forKey: key) == mirror.updateValue(value, forKey: key))
            }
            #expect(fields.count == mirror.count)
        }
        for (key, value) in mirror { #expect(fields[key] == value) }
        #expect(fields.dictionary == mirror)
    }
}
