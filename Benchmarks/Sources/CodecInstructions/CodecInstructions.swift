import BenchmarkModels
import CloudCodable
import Foundation

/// Runs one whole codec path on landmarks, or its Foundation baseline, a
/// given number of times, for callgrind to count the instructions.
///
///     CodecInstructions encode-cumulus 20 [--batch 100] [--handicap 1]
///
/// Every run builds the same fixture, checks that both coders agree on it
/// and makes one warm-up pass before the counted passes; `.ci/codec-ratios`
/// runs each path with N and 2N passes and takes the difference, so all of
/// that (and the process's start) cancels out.
@main
struct CodecInstructions {
    static func main() {
        do {
            let options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
            let fixture = try Fixture<Landmark>(count: options.batch)
            let problems = check(fixture)
            guard problems.isEmpty else {
                FileHandle.standardError.write(Data(problems.map { "error: \($0)\n" }.joined().utf8))
                exit(1)
            }
            // A warm-up pass: first-use costs fall in the short and the long run alike.
            var checksum = try run(options.mode, on: fixture, handicap: options.handicap)
            for _ in 0..<options.passes {
                checksum &+= try run(options.mode, on: fixture, handicap: options.handicap)
            }
            print(
                "\(options.mode.rawValue): \(options.passes) passes of \(options.batch) landmarks, checksum \(checksum)"
            )
        } catch let error as UsageError where error.help {
            print(UsageError.usage)
            exit(0)
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    /// One pass of `mode` over the whole batch. The Cumulus paths repeat
    /// `handicap` more times: deliberate extra work that shows the check fails.
    static func run(_ mode: Mode, on fixture: Fixture<Landmark>, handicap: Int) throws -> Int {
        switch mode {
        case .encodeCumulus, .decodeCumulus:
            var checksum = 0
            for _ in 0...handicap {
                checksum &+= try fixture.run(mode.path)
            }
            return checksum
        case .encodeFoundation, .decodeFoundation:
            return try fixture.run(mode.path)
        }
    }

    /// Checks outside the counted passes that both paths of each direction do
    /// the same job: each coder's output is what the fixture holds, and both
    /// decoders give back the very models the encoders were given.
    static func check(_ fixture: Fixture<Landmark>) -> [String] {
        let recordEncoder = RecordEncoder()
        let recordDecoder = RecordDecoder()
        let jsonEncoder = JSONEncoder()
        let jsonDecoder = JSONDecoder()
        var problems: [String] = []
        for (index, model) in fixture.models.enumerated() {
            do {
                if try WireFormat.encode(recordEncoder.encode(model)) != fixture.wire[index] {
                    problems.append("landmark #\(index): model → wire differs from the fixture's wire JSON")
                }
                // Not compared byte for byte: JSONEncoder's key order follows its hashing.
                if try jsonDecoder.decode(Landmark.self, from: jsonEncoder.encode(model)) != model {
                    problems.append("landmark #\(index): JSONEncoder's output does not decode to the model")
                }
                let cumulus = try recordDecoder.decode(
                    Landmark.self, from: WireFormat.decodeRecord(from: fixture.wire[index]))
                if cumulus != model { problems.append("landmark #\(index): wire → model differs from the model") }
                if try jsonDecoder.decode(Landmark.self, from: fixture.json[index]) != model {
                    problems.append("landmark #\(index): JSONDecoder differs from the model")
                }
            } catch {
                problems.append("landmark #\(index): \(error)")
            }
            if problems.count >= 3 { break }
        }
        return problems
    }
}

/// What one run measures: a whole path in one direction, Cumulus or Foundation.
enum Mode: String, CaseIterable {
    case encodeCumulus = "encode-cumulus"
    case encodeFoundation = "encode-foundation"
    case decodeCumulus = "decode-cumulus"
    case decodeFoundation = "decode-foundation"

    /// The fixture's path: the same code the timed benchmarks run.
    var path: CodecPath {
        switch self {
        case .encodeCumulus: .modelToWire
        case .encodeFoundation: .jsonEncoder
        case .decodeCumulus: .wireToModel
        case .decodeFoundation: .jsonDecoder
        }
    }
}

/// The command line.
struct Options {
    var mode: Mode
    var passes: Int
    var batch = 100
    var handicap = 0

    init(arguments: [String]) throws {
        var arguments = arguments[...]
        var positional: [String] = []
        while let argument = arguments.popFirst() {
            switch argument {
            case "--batch":
                guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
                    throw UsageError(message: "--batch needs a positive count")
                }
                batch = value
            case "--handicap":
                guard let value = arguments.popFirst().flatMap(Int.init), value >= 0 else {
                    throw UsageError(message: "--handicap needs a count of extra Cumulus passes")
                }
                handicap = value
            case "-h", "--help":
                throw UsageError(help: true)
            case _ where argument.hasPrefix("-"):
                throw UsageError(message: "unknown option '\(argument)'")
            default:
                positional.append(argument)
            }
        }
        guard positional.count == 2 else { throw UsageError(message: "expected a path and a count of passes") }
        guard let mode = Mode(rawValue: positional[0]) else {
            throw UsageError(message: "unknown path '\(positional[0])'")
        }
        guard let passes = Int(positional[1]), passes >= 0 else {
            throw UsageError(message: "the count of passes must be a number ≥ 0")
        }
        self.mode = mode
        self.passes = passes
    }
}

/// A command line that asks for the usage (`help`) or that cannot be run.
struct UsageError: Error, CustomStringConvertible {
    var message = ""
    var help = false

    static let usage =
        "usage: CodecInstructions \(Mode.allCases.map(\.rawValue).joined(separator: "|")) PASSES"
        + " [--batch COUNT] [--handicap EXTRA_CUMULUS_PASSES]"

    var description: String {
        (message.isEmpty ? "" : "error: \(message)\n") + Self.usage
    }
}
