extension JSONScanner {
    /// The value of the JSON number `text` (its grammar already checked)
    /// rounded to the nearest integer, halves away from zero, or `nil` when
    /// that does not fit `Int64`.
    ///
    /// The rounding is done on the decimal digits, not on a `Double`, so it is
    /// exact at every magnitude: `9223372036854775295.5` is
    /// `9223372036854775296`, where a `Double` would be 511 away. For the
    /// shortest text of a `Double` below 2^53 (what JSON encoders write) it
    /// agrees with rounding that `Double`.
    static func roundedInt64(_ text: UnsafeBufferPointer<UInt8>) -> Int64? {
        let count = text.count
        var i = 0
        let negative = count > 0 && text[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        let integerStart = i
        while i < count, isDigit(text[i]) { i &+= 1 }
        let integerCount = i &- integerStart
        var fractionStart = i
        var fractionCount = 0
        if i < count, text[i] == UInt8(ascii: ".") {
            i &+= 1
            fractionStart = i
            while i < count, isDigit(text[i]) { i &+= 1 }
            fractionCount = i &- fractionStart
        }
        let exponent = decimalExponent(text, from: i)
        // The digits, integer then fraction, as one sequence.
        func digit(_ k: Int) -> UInt64 {
            let byte = k < integerCount ? text[integerStart &+ k] : text[fractionStart &+ (k &- integerCount)]
            return UInt64(byte &- UInt8(ascii: "0"))
        }
        let digitCount = integerCount &+ fractionCount
        var first = 0
        while first < digitCount, digit(first) == 0 { first &+= 1 }
        if first == digitCount { return 0 }
        // Significant digits before the decimal point; the exponent is
        // saturated far beyond any input's length, so this cannot overflow.
        let point = integerCount &- first &+ exponent
        // The first significant digit is not zero: 20 digits are at least 10^19.
        guard point <= 19 else { return nil }
        var magnitude: UInt64 = 0
        var k = 0
        while k < point {
            let next = first &+ k < digitCount ? digit(first &+ k) : 0
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(next)
            guard !o1, !o2 else { return nil }
            magnitude = sum
            k &+= 1
        }
        // The digit after the point decides; a point before the first
        // significant digit leaves less than a tenth.
        if point >= 0, first &+ point < digitCount, digit(first &+ point) >= 5 {
            let (up, overflow) = magnitude.addingReportingOverflow(1)
            guard !overflow else { return nil }
            magnitude = up
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(bitPattern: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// The exponent of the number whose `e` or `E` (if any) is at `i`,
    /// saturated at ±10^15.
    private static func decimalExponent(_ text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var i = start
        guard i < text.count else { return 0 }
        i &+= 1
        var isNegative = false
        if i < text.count, text[i] == UInt8(ascii: "-") || text[i] == UInt8(ascii: "+") {
            isNegative = text[i] == UInt8(ascii: "-")
            i &+= 1
        }
        var exponent = 0
        while i < text.count, isDigit(text[i]) {
            exponent = min(exponent &* 10 &+ Int(text[i] &- UInt8(ascii: "0")), 1_000_000_000_000_000)
            i &+= 1
        }
        return isNegative ? -exponent : exponent
    }
}
