#if canImport(CryptoKit)
    import CryptoKit
#endif

/// SHA-256 (FIPS 180-4), for the body hash of server-to-server signatures,
/// the checksums of assets and the HMAC that signs their download URLs:
/// the platform's (CryptoKit) where there is one, ``PortableSHA256``
/// elsewhere.
package struct SHA256 {
    #if canImport(CryptoKit)
        private var hasher = CryptoKit.SHA256()
    #else
        private var hasher = PortableSHA256()
    #endif

    /// A digest of the empty message, to which ``update(_:)`` adds.
    package init() {}

    /// The digest of `bytes`, 32 bytes.
    package static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Adds `bytes` to the message.
    package mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        #if canImport(CryptoKit)
            let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
                hasher.update(bufferPointer: UnsafeRawBufferPointer(buffer))
            }
            guard done == nil else { return }
            Array(bytes).withUnsafeBytes { hasher.update(bufferPointer: $0) }
        #else
            hasher.update(bytes)
        #endif
    }

    /// Pads the message and returns its digest.
    package mutating func finalize() -> [UInt8] {
        #if canImport(CryptoKit)
            Array(hasher.finalize())
        #else
            hasher.finalize()
        #endif
    }
}

/// SHA-256 in Swift alone, where the platform has none to offer.
///
/// The root package takes no dependencies, so it cannot use swift-crypto.
/// Its steps do not branch on the data (rotations, additions, fixed loops),
/// so the HMAC of a secret key takes no key-dependent time.
package struct PortableSHA256 {
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// A digest of the empty message, to which ``update(_:)`` adds.
    package init() {}

    /// The digest of `bytes`, 32 bytes.
    package static func hash<Bytes: Sequence>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var hasher = PortableSHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Adds `bytes` to the message.
    package mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            update(UnsafeRawBufferPointer(buffer))
        }
        guard done == nil else { return }
        update(Array(bytes))
    }

    /// Adds the bytes of `buffer`: whole blocks straight from it, the rest
    /// through `pending`.
    private mutating func update(_ buffer: UnsafeRawBufferPointer) {
        length &+= UInt64(buffer.count)
        var offset = 0
        if !pending.isEmpty {
            let taken = min(64 - pending.count, buffer.count)
            pending.append(contentsOf: buffer[0..<taken])
            offset = taken
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        while buffer.count - offset >= 64 {
            compress(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + 64]))
            offset += 64
        }
        pending.append(contentsOf: buffer[offset...])
    }

    /// Pads the message and returns its digest.
    package mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        pending.append(0x80)
        if pending.count > 56 {
            pending.append(contentsOf: repeatElement(0, count: 64 - pending.count))
            pending.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        pending.append(contentsOf: repeatElement(0, count: 56 - pending.count))
        for shift in stride(from: 56, through: 0, by: -8) {
            pending.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        pending.withUnsafeBytes { compress($0) }
        pending.removeAll()
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in state {
            digest.append(contentsOf: [
                UInt8(truncatingIfNeeded: word >> 24), UInt8(truncatingIfNeeded: word >> 16),
                UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word),
            ])
        }
        return digest
    }

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { words in
            for index in 0..<16 {
                let base = index * 4
                words[index] =
                    UInt32(block[base]) << 24 | UInt32(block[base + 1]) << 16 | UInt32(block[base + 2]) << 8
                    | UInt32(block[base + 3])
            }
            for index in 16..<64 {
                let previous2 = words[index - 2]
                let previous15 = words[index - 15]
                let sigma1 = rotate(previous2, 17) ^ rotate(previous2, 19) ^ (previous2 >> 10)
                let sigma0 = rotate(previous15, 7) ^ rotate(previous15, 18) ^ (previous15 >> 3)
                words[index] = sigma1 &+ words[index - 7] &+ sigma0 &+ words[index - 16]
            }
            compress(words: UnsafeBufferPointer(words))
        }
    }

    private mutating func compress(words: UnsafeBufferPointer<UInt32>) {
        var a = state[0]
        var b = state[1]
        var c = state[2]
        var d = state[3]
        var e = state[4]
        var f = state[5]
        var g = state[6]
        var h = state[7]
        for index in 0..<64 {
            let sum1 = rotate(e, 6) ^ rotate(e, 11) ^ rotate(e, 25)
            let choice = (e & f) ^ (~e & g)
            let temp1 = h &+ sum1 &+ choice &+ Self.roundConstants[index] &+ words[index]
            let sum0 = rotate(a, 2) ^ rotate(a, 13) ^ rotate(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let temp2 = sum0 &+ majority
            h = g
            g = f
            f = e
            e = d &+ temp1
            d = c
            c = b
            b = a
            a = temp1 &+ temp2
        }
        state[0] &+= a
        state[1] &+= b
        state[2] &+= c
        state[3] &+= d
        state[4] &+= e
        state[5] &+= f
        state[6] &+= g
        state[7] &+= h
    }

    private func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 - count))
    }
}
