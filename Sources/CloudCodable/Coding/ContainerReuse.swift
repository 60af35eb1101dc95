/// The keyed containers a coder hands out, kept so that the next value of
/// the same type gets the same container again.
///
/// Making a `KeyedEncodingContainer` or `KeyedDecodingContainer` costs an
/// allocation and two generic-metadata lookups (the concrete container for
/// the caller's key type, and the standard library's box around it): for a
/// small model that was an eighth of the whole encode. A coder that is
/// reused from one record to the next keeps the boxes it made, one per key
/// type, and returns them again.
///
/// Reuse is only sound while nothing but the coder holds a box. The
/// containers refer to their coder without retaining it (a retained coder
/// would never look unused to ``ThreadLocalCache``), and each holds the
/// coder's ``ContainerLifeline`` instead. When a value is done,
/// ``endUse(by:)`` checks every box: one that is held elsewhere (a model
/// kept its container) retires the coder. A retired coder is never handed
/// out again, its lifeline keeps it alive for as long as the kept
/// container lives, and the containers it makes afterwards are not kept.
/// What a kept container does later is up to its coder: the coders here
/// ignore writes and find nothing once the value they belonged to is done.
///
/// Where a container is not one reference wide (a standard library other
/// than the one this was written against), nothing is kept.
struct ContainerReuse {
    private var keyTypes: [ObjectIdentifier] = []
    private var boxes: [AnyObject] = []
    private var lifeline = ContainerLifeline()
    /// Whether a container outlived its value: from then on nothing is kept.
    private(set) var isRetired = false

    /// Whether a container can be kept as its box alone.
    private static var canKeepBoxes: Bool {
        MemoryLayout<KeyedEncodingContainer<AnyCodingKey>>.size == MemoryLayout<AnyObject>.size
            && MemoryLayout<KeyedDecodingContainer<AnyCodingKey>>.size == MemoryLayout<AnyObject>.size
    }

    /// The object a new container should hold to keep `coder` alive: the
    /// shared lifeline, or for a retired coder the coder itself.
    @inline(__always)
    func keepAlive(_ coder: AnyObject) -> AnyObject { isRetired ? coder : lifeline }

    /// The position of the box kept for `Key`, if any.
    @inline(__always)
    private func index<Key>(of _: Key.Type) -> Int? {
        let id = ObjectIdentifier(Key.self)
        var i = 0
        while i < keyTypes.count {
            if keyTypes[i] == id { return i }
            i &+= 1
        }
        return nil
    }

    /// The kept container for `Key` (a `KeyedEncodingContainer<Key>` or a
    /// `KeyedDecodingContainer<Key>`), or a new one from `make`, which is
    /// kept unless the coder is retired.
    @inline(__always)
    mutating func container<Key: CodingKey, Container>(
        for _: Key.Type, make: (AnyObject) -> Container, coder: AnyObject
    ) -> Container {
        if let i = index(of: Key.self) { return unsafeBitCast(boxes[i], to: Container.self) }
        let container = make(keepAlive(coder))
        if !isRetired && Self.canKeepBoxes {
            keyTypes.append(ObjectIdentifier(Key.self))
            boxes.append(unsafeBitCast(container, to: AnyObject.self))
        }
        return container
    }

    /// Called when `coder` is done with a value: `false`, with the coder
    /// retired, when one of its kept containers is held elsewhere.
    mutating func endUse(by coder: AnyObject) -> Bool {
        if isRetired { return false }
        // Through the buffer: `&boxes[i]` on an `[AnyObject]` checks a
        // temporary copy, which is never unique.
        let kept = boxes.withUnsafeMutableBufferPointer { boxes in
            boxes.indices.contains { !isKnownUniquelyReferenced(&boxes[$0]) }
        }
        if kept {
            retire(coder)
            return false
        }
        // A coder that met a great many key types starts afresh.
        if keyTypes.count > 64 {
            keyTypes = []
            boxes = []
        }
        return true
    }

    /// Stops keeping containers for `coder`, which is not to be used for
    /// another value: its lifeline now holds it for the containers that
    /// were handed out.
    mutating func retire(_ coder: AnyObject) {
        guard !isRetired else { return }
        isRetired = true
        lifeline.coder = coder
        lifeline = ContainerLifeline()
        keyTypes = []
        boxes = []
    }
}

/// What a kept container holds instead of its coder: empty while the coder
/// is in service (so that the coder is not kept alive by its own
/// containers), the coder itself once it is retired.
final class ContainerLifeline {
    var coder: AnyObject?
}
