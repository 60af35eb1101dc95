/// A plain-text table with padded columns, for the figures the benchmark
/// executables print.
public struct TextTable {
    /// A column: its title, and whether its cells are right-aligned.
    public struct Column {
        var title: String
        var right: Bool
        /// Creates a column.
        public init(_ title: String, right: Bool = false) {
            self.title = title
            self.right = right
        }
    }

    let columns: [Column]
    private var rows: [[String]?] = []

    /// Creates a table with these columns.
    public init(columns: [Column]) {
        self.columns = columns
    }

    /// Adds a row.
    public mutating func add(_ cells: [String]) {
        rows.append(cells)
    }

    /// Adds a rule between rows.
    public mutating func addSeparator() {
        rows.append(nil)
    }

    /// Prints the table to standard output.
    public func print() {
        var widths = columns.map(\.title.count)
        for row in rows.compactMap({ $0 }) {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            zip(columns, zip(cells, widths)).map { column, pair in
                let padding = String(repeating: " ", count: pair.1 - pair.0.count)
                return column.right ? padding + pair.0 : pair.0 + padding
            }.joined(separator: "  ").trimmingTrailingSpaces
        }
        let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
        Swift.print(line(columns.map(\.title)))
        Swift.print(rule)
        for row in rows {
            if let row {
                Swift.print(line(row))
            } else {
                Swift.print(rule)
            }
        }
    }
}

extension String {
    fileprivate var trimmingTrailingSpaces: String {
        var result = self
        while result.last == " " { result.removeLast() }
        return result
    }
}

extension BinaryInteger {
    /// The number with thousands separators: `1,048,576`.
    public var grouped: String {
        let digits = String(self.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (self < 0 ? "-" : "") + result
    }
}

extension Double {
    /// Rounded to a whole number, with thousands separators; one decimal below 100.
    public var grouped: String {
        self < 100 ? oneDecimal : Int(rounded()).grouped
    }

    /// One decimal place: `12.3`.
    public var oneDecimal: String {
        let tenths = Int((self * 10).rounded())
        return "\((tenths / 10).grouped).\(abs(tenths % 10))"
    }

    /// As a percentage with two decimals: `0.42%`.
    public var percent: String {
        let hundredths = Int((self * 10_000).rounded())
        let fraction = abs(hundredths % 100)
        return "\((hundredths / 100).grouped).\(fraction < 10 ? "0" : "")\(fraction)%"
    }
}
