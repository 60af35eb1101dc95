#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Android)
    import Android
#endif

/// One reusable object per thread: the coders keep their scratch state
/// (buffers, stacks, the encoder objects themselves) here between calls, so
/// that encoding or decoding a record does not allocate them every time.
///
/// ``take()`` hands the thread's object over and leaves the slot empty, so
/// a nested use on the same thread (a model whose `encode(to:)` encodes
/// another record) makes its own object instead of sharing one that is in
/// use; ``give(_:)`` puts an object back when the slot is empty and
/// nothing else holds it. Nothing
/// is ever shared between threads, and a thread's object is released when
/// the thread ends. Where the platform has no POSIX threads the cache is
/// always empty.
///
/// It stays because making the coders afresh for every record (the objects,
/// their buffers, the nested value's stream encoder) takes the codec's
/// instruction ratios to Foundation's coders below the floors CI holds them
/// to (Benchmarks/README.md, "Codec review").
///
/// (`@unchecked Sendable`: the only stored state is the key, written once
/// in `init`; each thread's slot is private to that thread.)
final class ThreadLocalCache<Object: AnyObject>: @unchecked Sendable {
    #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Android)
        private let key: pthread_key_t?

        init() {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { object in
                // The thread ended: release its object.
                #if canImport(Darwin)
                    Unmanaged<AnyObject>.fromOpaque(object).release()
                #else
                    if let object { Unmanaged<AnyObject>.fromOpaque(object).release() }
                #endif
            }
            // Out of keys (the process has made hundreds): no caching then.
            self.key = status == 0 ? key : nil
        }

        /// The calling thread's object, which the caller now owns; `nil` when
        /// the thread has none (or it is in use further up the stack).
        @inline(__always)
        func take() -> Object? {
            guard let key, let object = pthread_getspecific(key) else { return nil }
            pthread_setspecific(key, nil)
            return Unmanaged<Object>.fromOpaque(object).takeRetainedValue()
        }

        /// Keeps `object` for the calling thread's next ``take()``, unless the
        /// thread already has one, or something else still holds it (a
        /// model that kept its `Decoder` or `Encoder`, or one of their
        /// containers): an object that is not uniquely referenced is never
        /// handed out again.
        @inline(__always)
        func give(_ object: inout Object) {
            guard isKnownUniquelyReferenced(&object) else { return }
            guard let key, pthread_getspecific(key) == nil else { return }
            pthread_setspecific(key, Unmanaged.passRetained(object).toOpaque())
        }
    #else
        init() {}
        func take() -> Object? { nil }
        func give(_ object: inout Object) {}
    #endif
}
