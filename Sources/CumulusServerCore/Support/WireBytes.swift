/// Searches in records' wire form, before deciding to decode them.
enum WireBytes {
    /// Whether `bytes` hold the UTF-8 of `needle` (at least two bytes long).
    static func contain(_ needle: StaticString, in bytes: [UInt8]) -> Bool {
        let needle = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        precondition(needle.count >= 2, "Internal inconsistency: a needle of fewer than two bytes")
        guard bytes.count >= needle.count else { return false }
        return bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            let last = buffer.count - needle.count
            while index <= last {
                if buffer[index] == needle[0], buffer[index + 1] == needle[1],
                    needle.indices.allSatisfy({ buffer[index + $0] == needle[$0] })
                {
                    return true
                }
                index += 1
            }
            return false
        }
    }
}
