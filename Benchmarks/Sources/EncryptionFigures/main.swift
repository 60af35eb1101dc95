import BenchmarkModels
import CloudCodable
import Cumulus
import CumulusCrypto
import Foundation

// Encrypted fields' cost on the way out: landmarks encoded into records,
// against the same encoding followed by sealing the fields a model would
// encrypt (AES-256-GCM), in one run. Prints records/s and the ratio; run
// with `swift run -c release --package-path Benchmarks EncryptionFigures`.

let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 20_000
let rounds = 5
let models = (0..<count).map(Landmark.sample)
let encryption = FieldEncryption(
    cipher: AESGCMFieldCipher(), keys: StaticFieldKeys(current: AESGCMFieldCipher.makeKey(identifier: "bench")))
let encoder = RecordEncoder()

/// The best of `rounds` timings of `body` over every model, in records per second.
func recordsPerSecond(_ body: (Landmark) throws -> Record) throws -> Double {
    var best = Duration.seconds(1_000_000)
    var sink = 0
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        for model in models { sink &+= try body(model).fields.count }
        best = min(best, ContinuousClock.now - start)
    }
    precondition(sink > 0)
    let seconds = Double(best.components.seconds) + Double(best.components.attoseconds) / 1e18
    return Double(count) / seconds
}

let cases: [(name: String, fields: Set<String>)] = [
    ("one field (name)", ["name"]),
    ("four fields (name, tags, visits, lastVisited)", ["name", "tags", "visits", "lastVisited"]),
]
let plain = try recordsPerSecond { try encoder.encode($0) }
print("Encrypted fields, \(count) landmarks, best of \(rounds) rounds")
print(String(format: "  encode only:                         %10.0f records/s", plain))
for (name, fields) in cases {
    let sealed = try recordsPerSecond { try encryption.seal(try encoder.encode($0), fields: fields) }
    print(
        String(
            format: "  encode + seal %-40@ %10.0f records/s (%.2f× the encode alone's time)", name as NSString, sealed,
            plain / sealed))
}

// The floor: the cipher alone, sealing a value of the size one field's
// wire JSON has, with the same key, as many times as there are records.
let key = AESGCMFieldCipher.makeKey(identifier: "bench")
let plaintext = try WireFormat.encode(
    Record(recordType: "", recordName: "", fields: ["name": .string("Landmark 1234")]))
var cipherBest = Duration.seconds(1_000_000)
var cipherSink = 0
for _ in 0..<rounds {
    let start = ContinuousClock.now
    for _ in 0..<count {
        cipherSink &+= try AESGCMFieldCipher().seal(plaintext, key: key.bytes, authenticating: [1, 2, 3]).count
    }
    cipherBest = min(cipherBest, ContinuousClock.now - start)
}
precondition(cipherSink > 0)
let cipherSeconds = Double(cipherBest.components.seconds) + Double(cipherBest.components.attoseconds) / 1e18
print(
    String(
        format: "  AES-GCM seal alone, one %d-byte value:    %10.0f values/s", plaintext.count,
        Double(count) / cipherSeconds))

// Reading: records decoded into models, against opening their sealed fields first.
let decoder = RecordDecoder()
let plainRecords = try models.map { try encoder.encode($0) }
let sealedRecords = try plainRecords.map { try encryption.seal($0, fields: ["name"]) }
func modelsPerSecond(_ records: [Record], _ body: (Record) throws -> Landmark) throws -> Double {
    var best = Duration.seconds(1_000_000)
    var sink = 0
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        for record in records { sink &+= try body(record).name.utf8.count }
        best = min(best, ContinuousClock.now - start)
    }
    precondition(sink > 0)
    let seconds = Double(best.components.seconds) + Double(best.components.attoseconds) / 1e18
    return Double(records.count) / seconds
}
let plainDecode = try modelsPerSecond(plainRecords) { try decoder.decode(Landmark.self, from: $0) }
let openedDecode = try modelsPerSecond(sealedRecords) {
    try decoder.decode(Landmark.self, from: try encryption.open($0, fields: ["name"]))
}
print(String(format: "  decode only:                         %10.0f records/s", plainDecode))
print(
    String(
        format: "  open one field + decode:             %10.0f records/s (%.2f× the decode alone's time)", openedDecode,
        plainDecode / openedDecode))
