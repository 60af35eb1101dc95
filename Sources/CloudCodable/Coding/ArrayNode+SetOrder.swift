import Foundation

/// Types that encode their elements in an order of their own making (a
/// `Set` iterates in hash order, which differs between equal sets and
/// between runs): the encoders sort what they write.
protocol UnorderedEncodable {}

extension Set: UnorderedEncodable {}

extension TreeEncoder {
    /// Whether values of type `T` are unordered collections.
    @inline(__always)
    static func isUnordered<T>(_: T.Type) -> Bool {
        T.self is any UnorderedEncodable.Type
    }
}

extension ArrayNode {
    /// Sorts the elements of an unordered collection into a canonical
    /// order: scalars of one kind by value (strings by their UTF-8 bytes,
    /// as object keys are), anything else by its canonical JSON.
    func sortAsSet() {
        guard items.count > 1 else { return }
        var isComparable = true
        let sorted = items.sorted { a, b in
            guard let order = Self.precedes(a.resolved, b.resolved) else {
                isComparable = false
                return false
            }
            return order
        }
        if isComparable {
            items = sorted
        } else {
            items = items.map { ($0, $0.jsonData()) }.sorted { $0.1.lexicographicallyPrecedes($1.1) }.map(\.0)
        }
    }

    /// Whether `a` comes before `b`, or `nil` when they are not scalars of one kind.
    private static func precedes(_ a: EncodedNode, _ b: EncodedNode) -> Bool? {
        switch (a, b) {
        case (.string(let a), .string(let b)): return ObjectNode.precedes(a, b)
        case (.int(let a), .int(let b)): return a < b
        case (.uint(let a), .uint(let b)): return a < b
        case (.int, .uint): return true
        case (.uint, .int): return false
        case (.bool(let a), .bool(let b)): return !a && b
        // Ties between -0 and 0 (equal, so never both in a set) by bits.
        case (.double(let a), .double(let b)): return a < b || (a == b && a.bitPattern < b.bitPattern)
        case (.float(let a), .float(let b)): return a < b || (a == b && a.bitPattern < b.bitPattern)
        case (.date(let a), .date(let b)): return a < b
        case (.data(let a), .data(let b)): return a.lexicographicallyPrecedes(b)
        case (.decimal(let a), .decimal(let b)): return a < b
        default: return nil
        }
    }
}
