import Cumulus
import CumulusServerCore

/// The entry point of `FuzzProtocol`. The first byte, modulo five times the
/// number of operations, chooses an operation (the byte modulo that number,
/// in `CloudOperation.allCases` order) and what the rest is (the byte
/// modulo five times it, divided by it):
///
/// - 0: the body of a request for the operation, as the server reads it;
/// - 1: the same, with a ``protocolFieldTypes`` lookup for fields sent without a type;
/// - 2: the body of the server's answer to the operation, as the client reads it;
/// - 3: the body of an answer with the HTTP status ``protocolStatuses`` gives the operation;
/// - 4: a notification batch (the operation plays no part).
///
/// Errors are fine outcomes when they are `CloudError`s of the documented
/// codes; a crash, a trap or a broken invariant (a `fatalError` below) is a
/// finding.
public func fuzzProtocol(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start, count > 0 else { return 0 }
    let operations = CloudOperation.allCases.count
    let choice = Int(start.pointee) % (5 * operations)
    let operation = CloudOperation.allCases[choice % operations]
    let body = Array(UnsafeBufferPointer(start: start + 1, count: count - 1))
    switch choice / operations {
    case 0: checkRequest(operation, body, fieldTypes: nil)
    case 1: checkRequest(operation, body, fieldTypes: protocolFieldTypes)
    case 2: checkAnswer(operation, body)
    case 3: checkErrorAnswer(status: protocolStatuses[choice % operations % protocolStatuses.count], body)
    default: checkBatch(body)
    }
    return 0
}

/// The first byte of a `FuzzProtocol` input: `mode` (0 to 4, as in
/// ``fuzzProtocol(_:_:)``) for `operation`.
func protocolModeByte(_ mode: Int, _ operation: CloudOperation) -> UInt8 {
    UInt8(mode * CloudOperation.allCases.count + CloudOperation.allCases.firstIndex(of: operation)!)
}

/// The schema the server knows in mode 1: a type for some field names, of
/// every record type, so that typeless fields of each type are read.
let protocolFieldTypes: FieldTypeLookup = { _, fieldName in
    switch fieldName {
    case "title", "string": .string
    case "count", "int": .int64
    case "double": .double
    case "date", "___createTime", "___modTime": .timestamp
    case "bytes": .bytes
    case "reference", "___recordID", "___createdBy", "___modifiedBy": .reference
    case "asset": .asset
    case "location", "where": .location
    case "tags", "strings": .stringList
    case "ints": .int64List
    case "doubles": .doubleList
    case "dates": .timestampList
    case "bytesList": .bytesList
    case "references": .referenceList
    case "assets": .assetList
    case "locations": .locationList
    default: nil
    }
}

/// The status of an error answer in mode 3, by operation: each one the
/// typed errors tell apart, an unusual one, and a success status.
let protocolStatuses = [400, 401, 403, 404, 413, 421, 429, 500, 502, 503, 504, 418, 200]

/// A request that reads encodes, for the same operation, into a body that
/// reads as the same request; one that does not read fails with `BAD_REQUEST`.
func checkRequest(_ operation: CloudOperation, _ body: [UInt8], fieldTypes: FieldTypeLookup?) {
    let request: CloudRequest
    do {
        request = try CloudRequest.decode(operation, body: body, fieldTypes: fieldTypes)
    } catch let error as CloudError {
        guard error.code == .badRequest else { fatalError("a bad \(operation.rawValue) request is \(error.code)") }
        return
    } catch {
        fatalError("a bad \(operation.rawValue) request threw \(type(of: error)), not a CloudError: \(error)")
    }
    guard request.operation == operation else {
        fatalError("a \(operation.rawValue) body read as a \(request.operation.rawValue) request")
    }
    let encoded: [UInt8]?
    do {
        encoded = try request.encodedBody()
    } catch {
        fatalError("a \(operation.rawValue) request that was read cannot be written: \(error)")
    }
    guard (encoded == nil) == (operation.httpMethod == "GET") else {
        fatalError("a \(operation.rawValue) request has a body: \(encoded != nil)")
    }
    let again: CloudRequest
    do {
        again = try CloudRequest.decode(operation, body: encoded ?? [], fieldTypes: fieldTypes)
    } catch {
        fatalError("a written \(operation.rawValue) request does not read back: \(error)\n\(text(encoded ?? []))")
    }
    guard again == request else {
        fatalError("a \(operation.rawValue) request changed on its way through the wire form:\n\(request)\n\(again)")
    }
}

/// An answer that reads encodes into a body that reads as the same answer;
/// one that does not read fails with `INTERNAL_ERROR`, except that
/// `changes/database` throws the error of a zone entry that is one.
func checkAnswer(_ operation: CloudOperation, _ body: [UInt8]) {
    let answer: CloudResponse
    do {
        answer = try CloudResponse.decode(operation, body: body)
    } catch let error as CloudError {
        guard error.code == .internalError || operation == .fetchDatabaseChanges else {
            fatalError("a bad answer to \(operation.rawValue) is \(error.code)")
        }
        return
    } catch {
        fatalError("a bad answer to \(operation.rawValue) threw \(type(of: error)), not a CloudError: \(error)")
    }
    let encoded: [UInt8]
    do {
        encoded = try answer.encodedBody()
    } catch {
        fatalError("an answer to \(operation.rawValue) that was read cannot be written: \(error)")
    }
    let again: CloudResponse
    do {
        again = try CloudResponse.decode(operation, body: encoded)
    } catch {
        fatalError("a written answer to \(operation.rawValue) does not read back: \(error)\n\(text(encoded))")
    }
    guard again == answer else {
        fatalError("an answer to \(operation.rawValue) changed on its way through the wire form:\n\(answer)\n\(again)")
    }
}

/// Every error answer is a `CloudError`, whose error dictionary reads back
/// as the same error; one whose body is not a dictionary has the status's code.
func checkErrorAnswer(status: Int, _ body: [UInt8]) {
    let error = CloudError.decode(httpStatus: status, body: body, contentType: "application/json")
    let again = CloudError.decode(httpStatus: 599, body: error.encodedBody(), contentType: nil)
    guard again == error else {
        fatalError(
            "an error changed on its way through its dictionary:\n\(error)\n\(again)\n\(text(error.encodedBody()))")
    }
    // An empty body is no dictionary: the error follows the status.
    let fromStatus = CloudError.decode(httpStatus: status, body: [], contentType: "application/json")
    guard fromStatus.code == documentedCode(status) else {
        fatalError("an answer of status \(status) that is not an error dictionary is \(fromStatus.code)")
    }
}

/// The code `CloudError.decode(httpStatus:body:contentType:)` documents for
/// a status whose body is not an error dictionary.
private func documentedCode(_ status: Int) -> CloudError.Code {
    switch status {
    case 401: .authenticationFailed
    case 403: .accessDenied
    case 404: .notFound
    case 421: .authenticationRequired
    case 429: .throttled
    case 502, 503, 504: .tryAgainLater
    case 400..<500: .badRequest
    default: .internalError
    }
}

/// A batch that reads encodes into a body that reads as the same batch; one
/// that does not read fails with `INTERNAL_ERROR`.
func checkBatch(_ body: [UInt8]) {
    let batch: NotificationBatch
    do {
        batch = try NotificationBatch.decode(body: body)
    } catch let error as CloudError {
        guard error.code == .internalError else { fatalError("a bad notification batch is \(error.code)") }
        return
    } catch {
        fatalError("a bad notification batch threw \(type(of: error)), not a CloudError: \(error)")
    }
    let encoded = batch.encodedBody()
    guard let again = try? NotificationBatch.decode(body: encoded) else {
        fatalError("a written notification batch does not read back: \(text(encoded))")
    }
    guard again == batch else { fatalError("a notification batch changed on its way through the wire form") }
}

/// `bytes` as text, for the messages of findings.
private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
