import Foundation
import VaporCSQLite

/// SQLite's own floor through its C API: the library the server links
/// (sqlite-nio's vendored copy), one connection, one prepared statement kept
/// for the whole run, no thread pool and no Swift wrapper between rows.
enum SQLiteFloor {
    /// Inserts the rows' wire JSON (WAL, `synchronous=FULL`, as the server
    /// opens its file), one `BEGIN IMMEDIATE … COMMIT` per batch, on a thread
    /// of its own; returns rows per second.
    static func rate(_ batches: [[(name: String, body: [UInt8])]]) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cumulus-c-floor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("floor.sqlite").path
        // Blocking calls (each COMMIT's fsync) stay off Swift's cooperative threads.
        let result: Result<Double, any Error> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Result { try run(batches, path: path) })
            }
            thread.start()
        }
        return try result.get()
    }

    private static func run(_ batches: [[(name: String, body: [UInt8])]], path: String) throws -> Double {
        var handle: OpaquePointer?
        try check(
            sqlite_nio_sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil), handle)
        defer { sqlite_nio_sqlite3_close(handle) }
        for sql in [
            "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
            "CREATE TABLE records (name TEXT PRIMARY KEY, body BLOB NOT NULL)",
        ] {
            try check(sqlite_nio_sqlite3_exec(handle, sql, nil, nil, nil), handle)
        }
        var insert: OpaquePointer?
        try check(
            sqlite_nio_sqlite3_prepare_v2(
                handle, "INSERT OR REPLACE INTO records (name, body) VALUES (?, ?)", -1, &insert, nil), handle)
        defer { sqlite_nio_sqlite3_finalize(insert) }
        // SQLITE_TRANSIENT: SQLite copies the bytes before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let clock = ContinuousClock()
        let start = clock.now
        var count = 0
        for batch in batches {
            try check(sqlite_nio_sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil), handle)
            for row in batch {
                try check(sqlite_nio_sqlite3_bind_text(insert, 1, row.name, -1, transient), handle)
                try row.body.withUnsafeBytes { body in
                    try check(
                        sqlite_nio_sqlite3_bind_blob(insert, 2, body.baseAddress, Int32(body.count), transient), handle)
                }
                guard sqlite_nio_sqlite3_step(insert) == SQLITE_DONE else { throw FloorError(handle) }
                sqlite_nio_sqlite3_reset(insert)
            }
            try check(sqlite_nio_sqlite3_exec(handle, "COMMIT", nil, nil, nil), handle)
            count += batch.count
        }
        return Double(count) / (clock.now - start).seconds
    }

    private static func check(_ code: Int32, _ handle: OpaquePointer?) throws {
        guard code == SQLITE_OK else { throw FloorError(handle) }
    }

    /// SQLite's message for a failed call of the floor.
    struct FloorError: Error, CustomStringConvertible {
        var description: String

        init(_ handle: OpaquePointer?) {
            description = sqlite_nio_sqlite3_errmsg(handle).map { String(cString: $0) } ?? "SQLite failed"
        }
    }
}
