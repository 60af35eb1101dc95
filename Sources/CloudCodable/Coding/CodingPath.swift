/// A coding path that is only turned into an array when someone asks for
/// it, so that encoding a nested value costs no allocation for its path.
struct CodingPath {
    private let parent: [any CodingKey]
    private let last: (any CodingKey)?

    init() {
        parent = []
        last = nil
    }

    init(_ key: some CodingKey) {
        parent = []
        last = key
    }

    private init(parent: [any CodingKey], last: any CodingKey) {
        self.parent = parent
        self.last = last
    }

    var keys: [any CodingKey] {
        guard let last else { return parent }
        return parent + [last]
    }

    func appending(_ key: some CodingKey) -> CodingPath {
        CodingPath(parent: keys, last: key)
    }

    func appending(index: Int) -> CodingPath {
        appending(AnyCodingKey(index: index))
    }
}
