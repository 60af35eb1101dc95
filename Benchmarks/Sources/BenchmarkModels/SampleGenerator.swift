import Foundation

/// A small deterministic pseudo-random generator (SplitMix64), so that every
/// run measures exactly the same values.
public struct SampleGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator whose sequence depends only on `seed`.
    public init(seed: Int) {
        state = UInt64(bitPattern: Int64(seed)) &* 0x9E37_79B9_7F4A_7C15 &+ 0xD1B5_4A32_D192_ED03
    }

    /// The next 64 pseudo-random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A version 4 UUID made of generated bits.
    public mutating func uuid() -> UUID {
        let high = next()
        let low = next()
        func byte(_ word: UInt64, _ index: UInt64) -> UInt8 { UInt8(truncatingIfNeeded: word >> (index * 8)) }
        return UUID(
            uuid: (
                byte(high, 0), byte(high, 1), byte(high, 2), byte(high, 3),
                byte(high, 4), byte(high, 5), byte(high, 6) & 0x0F | 0x40, byte(high, 7),
                byte(low, 0) & 0x3F | 0x80, byte(low, 1), byte(low, 2), byte(low, 3),
                byte(low, 4), byte(low, 5), byte(low, 6), byte(low, 7)
            ))
    }

    /// A date between 2020 and 2026 with whole milliseconds, the precision a
    /// `TIMESTAMP` field keeps, so values survive a round trip unchanged.
    public mutating func date() -> Date {
        let milliseconds = Int64.random(in: 1_577_836_800_000..<1_767_225_600_000, using: &self)
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// A double with at most `digits` decimal places in `range`.
    public mutating func decimal(in range: ClosedRange<Double>, digits: Int) -> Double {
        let scale = pow(10, Double(digits))
        return (Double.random(in: range, using: &self) * scale).rounded() / scale
    }

    /// One element of `words`.
    public mutating func word(from words: [String]) -> String {
        words[Int.random(in: 0..<words.count, using: &self)]
    }

    /// Prose of exactly `byteCount` UTF-8 bytes: words, punctuation, a line
    /// break roughly every 70 characters, an occasional quoted word and a few
    /// non-ASCII words, so that string escaping and UTF-8 counting are both
    /// exercised.
    public mutating func text(byteCount: Int) -> String {
        var text = ""
        text.reserveCapacity(byteCount)
        var bytes = 0
        var lineLength = 0
        while true {
            var word = self.word(from: Vocabulary.prose)
            switch Int.random(in: 0..<40, using: &self) {
            case 0: word = "\"" + word + "\""
            case 1: word += ","
            case 2: word += "."
            case 3: word = self.word(from: Vocabulary.accented)
            default: break
            }
            let separator = bytes == 0 ? "" : (lineLength > 70 ? "\n" : " ")
            let added = separator.utf8.count + word.utf8.count
            guard bytes + added <= byteCount else { break }
            text += separator
            text += word
            bytes += added
            lineLength = separator == "\n" ? word.utf8.count : lineLength + added
        }
        text += String(repeating: ".", count: byteCount - bytes)
        return text
    }
}

/// Word lists the samples draw from.
public enum Vocabulary {
    /// Plain English words.
    public static let prose = [
        "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "sync", "record", "cloud", "zone",
        "change", "token", "server", "client", "merge", "field", "value", "journal", "upload", "fetch",
        "notes", "meeting", "tomorrow", "remember", "groceries", "milk", "bread", "coffee", "project",
        "deadline", "review", "draft", "idea", "travel", "weekend", "garden", "library", "swift",
    ]

    /// Words with characters outside ASCII (two, three and four UTF-8 bytes).
    public static let accented = ["café", "naïve", "über", "Zürich", "smörgåsbord", "—", "→", "日本", "🚲"]

    /// Landmark names.
    public static let landmarks = [
        "Golden Gate Bridge", "Eiffel Tower", "Sagrada Família", "Tower Bridge", "Brandenburg Gate",
        "Sydney Opera House", "Machu Picchu", "Colosseum", "Table Mountain", "Mount Fuji",
        "Statue of Liberty", "Acropolis", "Alhambra", "Petra", "Angkor Wat", "Neuschwanstein Castle",
    ]

    /// Tags.
    public static let tags = [
        "bridge", "landmark", "san-francisco", "museum", "history", "view", "hike", "family", "unesco",
        "architecture", "sunset", "beach", "castle", "park",
    ]
}
