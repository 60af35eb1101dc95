import BenchmarkModels
import CloudCodable
import Foundation

/// Prints how fast each Cumulus serialisation path is against the Foundation
/// coder that does the same job, measured back to back in one process.
///
///     swift run -c release --package-path Benchmarks CodecRatios \
///         [--run-time 0.1] [--batch 1000] [landmark|note|wide|size]...
///
/// Absolute figures drift on a shared machine; the ratios are what to read.
@main
struct CodecRatios {
    static func main() {
        let options: Options
        do {
            options = try Options(arguments: Array(CommandLine.arguments.dropFirst()))
        } catch let error as UsageError where error.help {
            print(UsageError.usage)
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        }
        do {
            try run(options: options)
        } catch {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(options: Options) throws {
        let timing = Timing(rounds: 5, runTime: options.runTime)
        print(
            """
            CodecRatios: \(options.batch) models per run, median of \(timing.rounds) rounds, \
            ≥ \(options.runTime) per timed run, \(ProcessInfo.processInfo.activeProcessorCount) cores
            ratio = baseline ns ÷ Cumulus ns (higher is better); MB/s = wire JSON bytes per second (10⁶ B), \
            for the model↔record halves too; baseline MB/s counts the baseline's own output
            floor = a coder that only answers the model's own Codable calls (CodableFloor): \
            no Codable path can beat its ratio

            """)

        var report = Report()
        if options.wants("landmark") { try measure(Landmark.self, options: options, timing: timing, into: &report) }
        if options.wants("note") { try measure(Note.self, options: options, timing: timing, into: &report) }
        if options.wants("wide") { try measure(WideRecord.self, options: options, timing: timing, into: &report) }
        report.printCodecTable()
        if options.wants("size") { try measureSizeCheck(timing: timing) }
    }

    /// Targets for the whole paths against JSON, by model.
    static let targets: [String: Double] = ["Landmark": 10, "Wide": 10]

    static func measure<Model: BenchmarkModel>(
        _: Model.Type, options: Options, timing: Timing, into report: inout Report
    ) throws {
        let fixture = try Fixture<Model>(count: options.batch)
        let name = Model.displayName
        for problem in fixture.verify() {
            print("warning: \(problem)")
        }
        report.sizes.append(
            (
                name, fixture.wireByteCount / fixture.count, fixture.jsonByteCount / fixture.count,
                fixture.propertyListByteCount / fixture.count
            ))
        for encodes in [true, false] {
            let cumulus = CodecPath.cumulus.filter { $0.encodes == encodes }
            let json: CodecPath = encodes ? .jsonEncoder : .jsonDecoder
            let propertyList: CodecPath = encodes ? .propertyListEncoder : .propertyListDecoder
            let floor: CodecPath = encodes ? .floorEncode : .floorDecode
            let paths = cumulus + [json, propertyList, floor]
            let nanoseconds = try timing.medianNanoseconds(
                paths.map { path in ("\(name) \(path.rawValue)", { try fixture.run(path) }) })
            var perModel: [CodecPath: Double] = [:]
            for (path, time) in zip(paths, nanoseconds) {
                perModel[path] = time.map { $0 / Double(fixture.count) }
            }
            let whole: CodecPath = encodes ? .modelToWire : .wireToModel
            for path in cumulus {
                report.rows.append(
                    Report.Row(
                        model: name, path: path.rawValue, nanoseconds: perModel[path],
                        bytes: Double(fixture.byteCount(of: path)) / Double(fixture.count),
                        baseline: encodes ? "JSONEncoder" : "JSONDecoder",
                        baselineNanoseconds: perModel[json],
                        baselineBytes: Double(fixture.byteCount(of: json)) / Double(fixture.count),
                        target: path == whole ? targets[name] : nil))
            }
            report.rows.append(
                Report.Row(
                    model: name, path: whole.rawValue, nanoseconds: perModel[whole],
                    bytes: Double(fixture.byteCount(of: whole)) / Double(fixture.count),
                    baseline: encodes ? "PropertyListEncoder" : "PropertyListDecoder",
                    baselineNanoseconds: perModel[propertyList],
                    baselineBytes: Double(fixture.byteCount(of: propertyList)) / Double(fixture.count),
                    target: nil))
            // What the model's own Codable calls cost a coder that does
            // nothing else: the ratio here is the ceiling of any Codable path.
            report.rows.append(
                Report.Row(
                    model: name, path: floor.rawValue, nanoseconds: perModel[floor],
                    bytes: Double(fixture.byteCount(of: floor)) / Double(fixture.count),
                    baseline: encodes ? "JSONEncoder" : "JSONDecoder",
                    baselineNanoseconds: perModel[json],
                    baselineBytes: Double(fixture.byteCount(of: json)) / Double(fixture.count),
                    target: nil, remark: "ceiling of any Codable coder"))
        }
    }

    static func measureSizeCheck(timing: Timing) throws {
        let fixture = try SizeCheckFixture()
        let operations = SizeCheckFixture.Operation.allCases
        let nanoseconds = try timing.medianNanoseconds(
            operations.map { operation in ("SizeCheck \(operation.rawValue)", { try fixture.run(operation) }) })
        let encode = nanoseconds[operations.firstIndex(of: .encode)!]
        let modelToWire = nanoseconds[operations.firstIndex(of: .modelToWire)!]
        print(
            """
            Size check: a Note with a \(Note.largeBodyByteCount.grouped) B body; its fields take \
            \(fixture.encodedSize.grouped) B on the wire (limit \(RecordEncoder.defaultSizeLimit.grouped) B), \
            the whole record \(fixture.wireByteCount.grouped) B
            """)
        var table = TextTable(columns: [
            .init("operation"), .init("ns/op", right: true), .init("% of model→record", right: true),
            .init("% of model→wire", right: true), .init("target"),
        ])
        for (operation, time) in zip(operations, nanoseconds) {
            guard let time else {
                table.add([operation.rawValue, "failed", "", "", ""])
                continue
            }
            var target = ""
            if let encode, operation == .checkSize {
                target = "≤ 5% of model→record: " + (time <= encode * 0.05 ? "met" : "MISSED")
            }
            table.add([
                operation.rawValue, time.grouped, encode.map { (time / $0).percent } ?? "",
                modelToWire.map { (time / $0).percent } ?? "", target,
            ])
        }
        table.print()
    }
}

/// The codec rows collected over all models, printed as one table.
struct Report {
    struct Row {
        var model: String
        var path: String
        var nanoseconds: Double?
        var bytes: Double
        var baseline: String
        var baselineNanoseconds: Double?
        var baselineBytes: Double
        var target: Double?
        var remark = ""
    }

    var rows: [Row] = []
    var sizes: [(model: String, wire: Int, json: Int, propertyList: Int)] = []

    func printCodecTable() {
        guard !rows.isEmpty else { return }
        var table = TextTable(columns: [
            .init("model"), .init("path"), .init("Cumulus ns/model", right: true), .init("MB/s", right: true),
            .init("baseline"), .init("baseline ns/model", right: true), .init("baseline MB/s", right: true),
            .init("ratio", right: true), .init("target"),
        ])
        var previous = ""
        for row in rows {
            if !previous.isEmpty && previous != row.model { table.addSeparator() }
            previous = row.model
            var ratio: Double?
            if let nanoseconds = row.nanoseconds, let baseline = row.baselineNanoseconds {
                ratio = baseline / nanoseconds
            }
            var target = row.remark
            if let goal = row.target {
                target = "≥ \(Int(goal))×: " + ((ratio ?? 0) >= goal ? "met" : "MISSED")
            }
            table.add([
                row.model, row.path, row.nanoseconds?.grouped ?? "failed",
                row.nanoseconds.map { (row.bytes / $0 * 1000).oneDecimal } ?? "",
                row.baseline, row.baselineNanoseconds?.grouped ?? "failed",
                row.baselineNanoseconds.map { (row.baselineBytes / $0 * 1000).oneDecimal } ?? "",
                ratio.map { $0.oneDecimal + "×" } ?? "", target,
            ])
        }
        table.print()
        print("")
        var sizeTable = TextTable(columns: [
            .init("bytes per model"), .init("wire JSON", right: true), .init("JSONEncoder", right: true),
            .init("binary plist", right: true),
        ])
        for size in sizes {
            sizeTable.add([size.model, size.wire.grouped, size.json.grouped, size.propertyList.grouped])
        }
        sizeTable.print()
        print("")
    }
}

/// The command line.
struct Options {
    var runTime: Duration = .milliseconds(100)
    var batch = 1_000
    var filters: Set<String> = []

    /// The workloads a filter may name.
    static let workloads = ["landmark", "note", "wide", "size"]

    init(arguments: [String]) throws {
        var arguments = arguments[...]
        while let argument = arguments.popFirst() {
            switch argument {
            case "--run-time":
                guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
                    throw UsageError(message: "--run-time needs a number of seconds")
                }
                runTime = .milliseconds(Int(value * 1000))
            case "--batch":
                guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
                    throw UsageError(message: "--batch needs a positive count")
                }
                batch = value
            case "-h", "--help":
                throw UsageError(help: true)
            default:
                let name = argument.lowercased()
                guard Self.workloads.contains(name) else {
                    throw UsageError(message: "unknown argument '\(argument)'")
                }
                filters.insert(name)
            }
        }
    }

    /// Whether the workload named `name` was asked for (all are, by default).
    func wants(_ name: String) -> Bool {
        filters.isEmpty || filters.contains(name)
    }
}

/// A command line that asks for the usage (`help`) or that cannot be run.
struct UsageError: Error, CustomStringConvertible {
    var message = ""
    var help = false

    static let usage =
        "usage: CodecRatios [--run-time SECONDS] [--batch COUNT] [\(Options.workloads.joined(separator: "|"))]..."

    var description: String {
        (message.isEmpty ? "" : "error: \(message)\n") + Self.usage
    }
}
