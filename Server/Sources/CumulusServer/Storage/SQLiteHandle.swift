import CloudProtocol
import Foundation
import NIOCore
import SQLiteNIO
import VaporCSQLite

/// One `sqlite3` connection (the library sqlite-nio vendors) that
/// ``SQLiteStorage`` owns, called synchronously on its
/// ``SQLiteStorageThread``, with each statement prepared once and kept.
///
/// Every call of the handle runs on that thread: ``run(_:)`` takes the
/// caller there (a transaction's body runs there whole), and ``query(_:_:)``
/// calls SQLite at once when already there.
final class SQLiteHandle: @unchecked Sendable {
    /// The thread every call runs on.
    let thread: SQLiteStorageThread
    // Touched only on `thread`.
    private var raw: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// Statements kept at most: texts differ by their count of `?`, so
    /// their number is bounded only by the requests'.
    static let cacheLimit = 256

    private init(thread: SQLiteStorageThread) {
        self.thread = thread
    }

    /// Opens (creating if needed) the file at `path`.
    static func open(path: String) async throws -> SQLiteHandle {
        let handle = SQLiteHandle(thread: SQLiteStorageThread(name: "cumulus-sqlite"))
        do {
            try await handle.run { handle in try handle.openOnThread(path: path) }
        } catch {
            await handle.close()
            throw error
        }
        return handle
    }

    private func openOnThread(path: String) throws {
        _ = sqliteInitialized
        // The flags sqlite-nio opens with (its other connections, such as backups', open the same file).
        let flags =
            SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_URI | SQLITE_OPEN_EXRESCODE
        let code = sqlite_nio_sqlite3_open_v2(path, &raw, flags, nil)
        guard code == SQLITE_OK else {
            let failure = SQLiteFailure(code: code, handle: raw)
            sqlite_nio_sqlite3_close(raw)
            raw = nil
            throw failure
        }
    }

    /// Runs `body` on the storage thread, and the nonisolated async code it
    /// calls too.
    func run<T>(_ body: (SQLiteHandle) async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(thread) {
            try await body(self)
        }
    }

    /// Runs `sql` with `binds` and returns its rows; on the storage thread
    /// at once, from elsewhere by going there.
    @discardableResult
    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteStoredRow] {
        if thread.isCurrent { return try querySynchronously(sql, binds) }
        return try await run { handle in try handle.querySynchronously(sql, binds) }
    }

    /// Runs `sql` with `binds` and returns its rows; only on the storage thread.
    @discardableResult
    func querySynchronously(_ sql: String, _ binds: [SQLiteData] = []) throws -> [SQLiteStoredRow] {
        guard raw != nil else { throw CloudError(.internalError, reason: "the storage is closed") }
        let statement = try prepared(sql)
        defer {
            sqlite_nio_sqlite3_reset(statement)
            sqlite_nio_sqlite3_clear_bindings(statement)
        }
        try bind(binds, to: statement)
        var columns: SQLiteColumnNames?
        var rows: [SQLiteStoredRow] = []
        while true {
            let code = sqlite_nio_sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { throw SQLiteFailure(code: code, handle: raw) }
            // Columns are read after the first step: a statement re-prepared for a changed schema may have new ones.
            let names = columns ?? SQLiteColumnNames(statement)
            columns = names
            var values: [SQLiteData] = []
            values.reserveCapacity(names.names.count)
            for index in names.names.indices { values.append(try value(statement, at: Int32(index))) }
            rows.append(SQLiteStoredRow(columns: names, values: values))
        }
    }

    /// Finalizes the kept statements, closes the connection and lets the
    /// thread end.
    func close() async {
        _ = try? await run { handle in handle.closeOnThread() }
        thread.stop()
    }

    private func closeOnThread() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
        statements.removeAll()
        if let raw { sqlite_nio_sqlite3_close_v2(raw) }
        raw = nil
    }

    /// The statement kept for `sql`, prepared now if it is new. SQLite
    /// prepares a kept statement again itself when the schema changed.
    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let code = sqlite_nio_sqlite3_prepare_v3(
            raw, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw SQLiteFailure(code: code, handle: raw) }
        if statements.count >= Self.cacheLimit {
            for kept in statements.values { sqlite_nio_sqlite3_finalize(kept) }
            statements.removeAll(keepingCapacity: true)
        }
        statements[sql] = statement
        return statement
    }

    private func bind(_ binds: [SQLiteData], to statement: OpaquePointer) throws {
        for (offset, bind) in binds.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch bind {
            case .blob(let value):
                code = value.withUnsafeReadableBytes {
                    sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), transient)
                }
            case .float(let value):
                code = sqlite_nio_sqlite3_bind_double(statement, index, value)
            case .integer(let value):
                code = sqlite_nio_sqlite3_bind_int64(statement, index, Int64(value))
            case .null:
                code = sqlite_nio_sqlite3_bind_null(statement, index)
            case .text(let value):
                // The string's bytes with their length, so that a U+0000 inside is kept (and "" is not NULL).
                code = sqlite_nio_sqlite3_bind_text64(
                    statement, index, value, UInt64(value.utf8.count), transient, UInt8(SQLITE_UTF8))
            }
            guard code == SQLITE_OK else { throw SQLiteFailure(code: code, handle: raw) }
        }
    }

    /// A column's value as sqlite-nio reads it: TEXT as a string up to its
    /// first U+0000 (names are selected as their bytes, ``SQLiteColumns``).
    private func value(_ statement: OpaquePointer, at index: Int32) throws -> SQLiteData {
        switch sqlite_nio_sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(SQLiteInt64(sqlite_nio_sqlite3_column_int64(statement, index)))
        case SQLITE_FLOAT:
            return .float(sqlite_nio_sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let text = sqlite_nio_sqlite3_column_text(statement, index) else {
                throw SQLiteFailure(code: SQLITE_NOMEM, handle: raw)
            }
            return .text(String(cString: text))
        case SQLITE_BLOB:
            let bytes = sqlite_nio_sqlite3_column_blob(statement, index)
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            return .blob(ByteBuffer(bytes: UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : count)))
        default:
            return .null
        }
    }
}

/// SQLite's configuration set up once, before the first connection opens.
private let sqliteInitialized: Int32 = sqlite_nio_sqlite3_initialize()

/// SQLITE_TRANSIENT: SQLite copies a bound value before the call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// The names of a statement's columns, shared by the rows it returned.
final class SQLiteColumnNames: Sendable {
    let names: [String]

    init(_ statement: OpaquePointer) {
        names = (0..<sqlite_nio_sqlite3_column_count(statement)).map { index in
            sqlite_nio_sqlite3_column_name(statement, index).map { String(cString: $0) } ?? ""
        }
    }
}

/// One row a ``SQLiteHandle`` query returned.
struct SQLiteStoredRow: Sendable {
    let columns: SQLiteColumnNames
    let values: [SQLiteData]

    /// The value of the first column named `name`, or `nil` when none is.
    func column(_ name: String) -> SQLiteData? {
        // A handful of columns: a scan beats hashing the name.
        for (index, column) in columns.names.enumerated() where column.utf8.elementsEqual(name.utf8) {
            return values[index]
        }
        return nil
    }
}

/// A failed call of SQLite: its result code and message.
struct SQLiteFailure: Error, CustomStringConvertible {
    var code: Int32
    var message: String

    init(code: Int32, handle: OpaquePointer?) {
        self.code = code
        message =
            handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite_nio_sqlite3_errstr(code))
    }

    var description: String { "SQLite error \(code): \(message)" }
}
