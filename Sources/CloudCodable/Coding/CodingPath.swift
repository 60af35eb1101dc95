/// A coding path that is only turned into an array when someone asks for
/// it (an error, a nested coder's `codingPath`), so that the coders can
/// carry one along for every nested value at little cost.
///
/// The last key is held inline, so that the path of a record's field costs
/// no allocation; the keys before it form a list linked from the last to
/// the first, so that appending a key makes one small object instead of
/// copying every key before it.
struct CodingPath {
    private final class Node: Sendable {
        let parent: Node?
        let key: any CodingKey
        let count: Int

        init(parent: Node?, key: any CodingKey) {
            self.parent = parent
            self.key = key
            count = (parent?.count ?? 0) &+ 1
        }
    }

    private let parent: Node?
    private let last: (any CodingKey)?

    init() {
        parent = nil
        last = nil
    }

    init(_ key: some CodingKey) {
        parent = nil
        last = key
    }

    private init(parent: Node?, last: any CodingKey) {
        self.parent = parent
        self.last = last
    }

    /// The keys from the outermost in.
    var keys: [any CodingKey] {
        guard let last else { return [] }
        guard let parent else { return [last] }
        var keys = [any CodingKey](repeating: last, count: parent.count &+ 1)
        var node: Node? = parent
        var i = parent.count
        while let current = node {
            i &-= 1
            keys[i] = current.key
            node = current.parent
        }
        return keys
    }

    func appending(_ key: some CodingKey) -> CodingPath {
        guard let last else { return CodingPath(key) }
        return CodingPath(parent: Node(parent: parent, key: last), last: key)
    }

    func appending(index: Int) -> CodingPath {
        appending(AnyCodingKey(index: index))
    }
}
