import Foundation

/// Maps `items` with `transform` on every core, keeping their order, when
/// there are at least `minimumCount` of them (below that, splitting costs
/// more than it saves); on the caller's task otherwise.
func parallelMap<Item: Sendable, Mapped: Sendable>(
    _ items: [Item], minimumCount: Int, _ transform: @escaping @Sendable (Item) throws -> Mapped
) async throws -> [Mapped] {
    let workers = min(ProcessInfo.processInfo.activeProcessorCount, 16)
    guard workers > 1, items.count >= max(minimumCount, 2) else { return try items.map(transform) }
    let chunkSize = (items.count + workers - 1) / workers
    return try await withThrowingTaskGroup(of: (Int, [Mapped]).self) { group in
        for (index, start) in stride(from: 0, to: items.count, by: chunkSize).enumerated() {
            let chunk = items[start..<min(start + chunkSize, items.count)]
            group.addTask { (index, try chunk.map(transform)) }
        }
        var chunks: [[Mapped]] = Array(repeating: [], count: workers)
        for try await (index, mapped) in group { chunks[index] = mapped }
        return chunks.flatMap { $0 }
    }
}
