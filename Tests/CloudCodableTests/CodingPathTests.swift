import Testing

@testable import CloudCodable

@Suite("CodingPath")
struct CodingPathTests {
    @Test("keys come out from the outermost in, however the path was built")
    func keysInOrder() {
        #expect(CodingPath().keys.isEmpty)
        #expect(CodingPath(AnyCodingKey("a")).keys.map(\.stringValue) == ["a"])
        #expect(CodingPath().appending(AnyCodingKey("a")).keys.map(\.stringValue) == ["a"])
        let base = CodingPath(AnyCodingKey("a")).appending(AnyCodingKey("b"))
        let deep = base.appending(index: 2).appending(AnyCodingKey("c"))
        #expect(deep.keys.map(\.stringValue) == ["a", "b", "Index 2", "c"])
        #expect(deep.keys[2].intValue == 2)
        // Appending leaves the path it started from as it was.
        let sibling = base.appending(AnyCodingKey("d"))
        #expect(base.keys.map(\.stringValue) == ["a", "b"])
        #expect(sibling.keys.map(\.stringValue) == ["a", "b", "d"])
        #expect(deep.keys.map(\.stringValue) == ["a", "b", "Index 2", "c"])
    }
}
