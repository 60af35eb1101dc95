/// A map of at most `capacity` entries that forgets the least recently
/// used one to make room: a doubly linked list threaded through an array,
/// so that a hit, an insert and an eviction each take constant time.
struct LRUCache<Key: Hashable, Value> {
    private struct Node {
        var key: Key
        var value: Value
        var newer: Int?
        var older: Int?
    }

    let capacity: Int
    private var nodes: [Node] = []
    private var slots: [Key: Int] = [:]
    private var free: [Int] = []
    private var newest: Int?
    private var oldest: Int?

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// How many entries are held.
    var count: Int { slots.count }

    /// The value of `key`, which becomes the most recently used.
    mutating func value(for key: Key) -> Value? {
        guard let slot = slots[key] else { return nil }
        moveToNewest(slot)
        return nodes[slot].value
    }

    /// Keeps `value` for `key` as the most recently used entry, forgetting
    /// the least recently used one when full.
    mutating func insert(_ value: Value, for key: Key) {
        if let slot = slots[key] {
            nodes[slot].value = value
            moveToNewest(slot)
            return
        }
        guard capacity > 0 else { return }
        if slots.count >= capacity, let oldest { remove(slot: oldest) }
        let node = Node(key: key, value: value, newer: nil, older: newest)
        let slot: Int
        if let reused = free.popLast() {
            nodes[reused] = node
            slot = reused
        } else {
            nodes.append(node)
            slot = nodes.count - 1
        }
        link(slot)
    }

    /// Forgets `key`.
    mutating func removeValue(for key: Key) {
        if let slot = slots[key] { remove(slot: slot) }
    }

    /// Forgets every entry whose value matches.
    mutating func removeAll(where shouldRemove: (Value) -> Bool) {
        for slot in Array(slots.values) where shouldRemove(nodes[slot].value) {
            remove(slot: slot)
        }
    }

    /// Forgets everything.
    mutating func removeAll() {
        self = LRUCache(capacity: capacity)
    }

    /// The keys from the most to the least recently used, for tests.
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while let current = slot {
            keys.append(nodes[current].key)
            slot = nodes[current].older
        }
        return keys
    }

    private mutating func link(_ slot: Int) {
        nodes[slot].newer = nil
        nodes[slot].older = newest
        if let newest { nodes[newest].newer = slot }
        newest = slot
        if oldest == nil { oldest = slot }
        slots[nodes[slot].key] = slot
    }

    private mutating func unlink(_ slot: Int) {
        let (newer, older) = (nodes[slot].newer, nodes[slot].older)
        if let newer { nodes[newer].older = older } else { newest = older }
        if let older { nodes[older].newer = newer } else { oldest = newer }
    }

    private mutating func moveToNewest(_ slot: Int) {
        guard newest != slot else { return }
        unlink(slot)
        link(slot)
    }

    private mutating func remove(slot: Int) {
        unlink(slot)
        slots[nodes[slot].key] = nil
        free.append(slot)
    }
}
