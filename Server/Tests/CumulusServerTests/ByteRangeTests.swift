import Testing

@testable import CumulusServer

/// `Range` headers read against an asset's size, as RFC 9110 §14.1.2 has
/// them: a last byte past the end is the end, a first byte past it is 416.
@Suite("Byte ranges")
struct ByteRangeTests {
    @Test("a range that runs past the end is served to the end, however far past")
    func clampedToTheEnd() {
        let cases: [(String, Range<Int64>)] = [
            ("bytes=0-100", 0..<100), ("bytes=90-200", 90..<100), ("bytes=99-99999", 99..<100),
            ("bytes=0-9223372036854775807", 0..<100), ("bytes=5-99999999999999999999999999", 5..<100),
            ("bytes=0-99", 0..<100), ("bytes=10-19", 10..<20), ("bytes=10-", 10..<100), ("bytes=-5", 95..<100),
            ("bytes=-1000", 0..<100), ("bytes=-99999999999999999999999", 0..<100), (" bytes=1-2 ", 1..<3),
        ]
        for (header, range) in cases {
            #expect(ByteRange(header: header, size: 100) == .part(range), "\(header)")
        }
    }

    @Test("a range that holds no byte of the asset is 416; one the server may ignore is the whole asset")
    func unsatisfiableAndIgnored() {
        for header in [
            "bytes=100-", "bytes=100-200", "bytes=150-160", "bytes=9223372036854775807-", "bytes=-0",
            "bytes=99999999999999999999-99999999999999999999",
        ] {
            #expect(ByteRange(header: header, size: 100) == .unsatisfiable, "\(header)")
        }
        #expect(ByteRange(header: "bytes=0-", size: 0) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=-5", size: 0) == .unsatisfiable)
        for header in [nil, "bytes=0-1,5-6", "items=0-5", "bytes=5-4", "bytes=a-b", "bytes=", "bytes=-", "bytes=1"] {
            #expect(ByteRange(header: header, size: 100) == .whole, "\(String(describing: header))")
        }
    }
}
