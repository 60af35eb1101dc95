/// A `Range` request header (`bytes=a-b`, `bytes=a-`, `bytes=-n`) read
/// against the size of what is asked for, as RFC 9110 §14 has it: a range
/// that runs past the end is served to the end, one that holds no byte of
/// the asset is refused.
enum ByteRange: Equatable {
    /// No range, or one the server may ignore (several ranges, another unit,
    /// bad syntax): the whole asset is answered.
    case whole
    /// The bytes of this range, answered 206: never empty, always inside the asset.
    case part(Range<Int64>)
    /// A range that holds no byte of the asset (its first byte at or past
    /// the end, `bytes=-0`, any range of an empty asset), answered 416.
    case unsatisfiable

    /// Reads `header` for an asset of `size` bytes.
    init(header: String?, size: Int64) {
        guard let header else {
            self = .whole
            return
        }
        let text = header.trimmingWhitespace()
        guard text.lowercased().hasPrefix("bytes=") else {
            self = .whole
            return
        }
        let spec = text.dropFirst("bytes=".count).trimmingWhitespace()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = spec[..<dash].trimmingWhitespace()
        let last = spec[spec.index(after: dash)...].trimmingWhitespace()
        if first.isEmpty {
            // `bytes=-n`: the last n bytes.
            guard let count = Self.number(last) else {
                self = .whole
                return
            }
            guard count > 0, size > 0 else {
                self = .unsatisfiable
                return
            }
            self = .part(max(0, size - count)..<size)
            return
        }
        guard let start = Self.number(first) else {
            self = .whole
            return
        }
        var end = Int64.max
        if !last.isEmpty {
            // A last byte before the first makes the range invalid: ignored (RFC 9110 §14.1.1).
            guard let asked = Self.number(last), asked >= start else {
                self = .whole
                return
            }
            end = asked
        }
        // A range holds a byte of the asset when its first byte does; a last
        // byte past the end is the end (RFC 9110 §14.1.2). Clamping after
        // this check keeps the range inside the asset, never inverted.
        guard start < size else {
            self = .unsatisfiable
            return
        }
        self = .part(start..<min(end, size - 1) + 1)
    }

    /// A run of decimal digits; a number past `Int64` reads as its maximum.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text) ?? .max
    }
}

extension StringProtocol {
    fileprivate func trimmingWhitespace() -> Substring {
        let view = self[...]
        let start = view.firstIndex { $0 != " " && $0 != "\t" } ?? view.endIndex
        let end = view.lastIndex { $0 != " " && $0 != "\t" }.map { view.index(after: $0) } ?? start
        return Substring(view[start..<Swift.max(start, end)])
    }
}
