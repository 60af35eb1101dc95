import ArgumentParser
import Foundation
import Logging

/// How much a command logs: `--log-level`, else `CUMULUS_LOG_LEVEL`, else `info`.
struct LogOptions: ParsableArguments {
    /// The environment variable read when `--log-level` is absent.
    static let variable = "CUMULUS_LOG_LEVEL"

    @Option(
        help: ArgumentHelp(
            "The least severe level logged: trace, debug, info, notice, warning, error or critical.",
            discussion: "CUMULUS_LOG_LEVEL does the same; this option wins. The default is info."),
        transform: { try LogOptions.parse($0) })
    var logLevel: Logger.Level?

    func validate() throws {
        _ = try level()
    }

    /// The level the option or `environment` selects.
    func level(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Logger.Level {
        if let logLevel { return logLevel }
        guard let text = environment[Self.variable], !text.isEmpty else { return .info }
        do {
            return try Self.parse(text)
        } catch let error as ValidationError {
            throw ValidationError("\(Self.variable): \(error.message)")
        }
    }

    /// The level `text` names, in any case.
    static func parse(_ text: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("'\(text)' is not a log level: \(names).")
        }
        return level
    }

    /// The command's logger, at the selected level.
    func logger(label: String = "cumulus") throws -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = try level()
        return logger
    }
}
