import CumulusServerCore
import Foundation
import Hummingbird

/// The load page: the requests this server answered (from its own
/// metrics, ``RequestLoad``) and what the store holds.
extension ConsoleRoutes {
    func addLoad(to console: RouterGroup<CumulusRequestContext>) {
        console.get("load") { request, _ in try await page(request) { try await loadPage($0, $1) } }
    }

    private func loadPage(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let reading = load.reading()
        let footprint = try await service.rules.footprint()
        let lastMinute = reading.lastMinute.values.reduce(0, +)
        // Over the part of the minute the server has been up, so a new server's rate is not understated.
        let window = Double(max(1, min(Int64(LoadTally.window), reading.uptime)))
        let operations = reading.operations.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map {
            name, totals -> [String: Any] in
            Self.totalsValues(totals).merging(["name": name, "lastMinute": reading.lastMinute[name] ?? 0]) { $1 }
        }
        let values: [String: Any] = [
            "uptime": reading.uptime, "overall": Self.totalsValues(reading.overall), "lastMinute": lastMinute,
            "rate": String(format: "%.2f", Double(lastMinute) / window),
            "lastMinuteErrors": reading.lastMinuteServerErrors, "operations": operations,
            "databaseBytes": footprint.databaseBytes.map(Self.bytes) ?? "not measured by this store",
            "assetCount": footprint.assetCount, "assetBytes": Self.bytes(footprint.assetBytes),
        ]
        return html(.ok, pages.render("load", title: "Load", session: session, values))
    }

    private static func totalsValues(_ totals: LoadTotals) -> [String: Any] {
        [
            "requests": totals.requests, "clientErrors": totals.clientErrors, "serverErrors": totals.serverErrors,
            "mean": totals.mean.map(milliseconds) ?? "–",
            "longest": totals.requests == 0 ? "–" : milliseconds(totals.longest),
            "p50": bound(totals, 0.5), "p95": bound(totals, 0.95), "p99": bound(totals, 0.99),
        ]
    }

    private static func bound(_ totals: LoadTotals, _ quantile: Double) -> String {
        guard let bound = totals.bound(ofQuantile: quantile) else { return "–" }
        guard bound.isFinite else { return "> \(milliseconds(LoadTally.bucketBounds.last ?? 0))" }
        return "≤ \(milliseconds(bound))"
    }

    private static func milliseconds(_ seconds: Double) -> String {
        String(format: "%.1f ms", seconds * 1000)
    }

    /// A byte count with its binary-prefixed size.
    static func bytes(_ count: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var size = Double(count)
        var unit = -1
        while size >= 1024, unit < units.count - 1 {
            size /= 1024
            unit += 1
        }
        return unit < 0 ? "\(count) bytes" : String(format: "%.1f", size) + " \(units[unit]) (\(count) bytes)"
    }
}
