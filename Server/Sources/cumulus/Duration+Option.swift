import ArgumentParser
import CumulusServer
import Foundation

/// A duration on the command line: a number and a unit, `90s`, `30m`,
/// `12h`, `30d` or `2w` (a bare number is seconds).
struct DurationOption: ExpressibleByArgument, Sendable, Hashable {
    /// The duration.
    let duration: Duration

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Int64)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
        var number = Substring(text)
        var scale: Int64 = 1
        if let unit = units.first(where: { text.hasSuffix($0.0) }) {
            number = number.dropLast(unit.0.count)
            scale = unit.1
        }
        guard !number.isEmpty, number.allSatisfy(\.isASCII), let value = Int64(number), value >= 0,
            value <= 100 * 366 * 86_400 / scale
        else { return nil }
        duration = .seconds(value * scale)
    }

    /// The duration as an operator reads it back, e.g. `30d` or `90s`.
    var description: String {
        let seconds = duration.components.seconds
        for (unit, scale) in [("w", Int64(604_800)), ("d", 86_400), ("h", 3600), ("m", 60)]
        where seconds >= scale && seconds % scale == 0 {
            return "\(seconds / scale)\(unit)"
        }
        return "\(seconds)s"
    }
}

/// Dates as commands print them: ISO 8601 in UTC, to the second.
enum PrintedDate {
    static func text(milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: ServerTime.date(milliseconds: milliseconds))
    }

    static func text(_ date: Date) -> String {
        text(milliseconds: ServerTime.milliseconds(date))
    }
}

/// Rows printed as columns padded to the widest cell, the header first.
enum PrintedTable {
    static func lines(header: [String], rows: [[String]]) -> [String] {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        return ([header] + rows).map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}
