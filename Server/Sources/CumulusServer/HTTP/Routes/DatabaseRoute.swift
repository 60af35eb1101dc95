import CloudCodable
import CloudProtocol
import Hummingbird

/// What a database path names,
/// `/database/1/{container}/{environment}/{scope}/{operation}`: read once,
/// by ``AuthenticationMiddleware``, for the route and the metrics alike.
struct DatabaseRoute: Sendable {
    /// The container the path names.
    let container: String
    /// The environment the path names.
    let environment: CloudEnvironment
    /// The database the path names.
    let scope: DatabaseScope
    /// The operation the path names.
    let operation: CloudOperation

    /// The database paths: most operations are two path components;
    /// `users/lookup/email` and `users/lookup/id` are three.
    static let paths: [RouterPath] = [
        "/database/1/:container/:environment/:scope/:group/:action",
        "/database/1/:container/:environment/:scope/:group/:action/:detail",
    ]

    /// The operation's name as the path spells it (`records/modify`).
    static func operationName(in parameters: Parameters) -> String {
        var name = "\(parameters.get("group") ?? "")/\(parameters.get("action") ?? "")"
        if let detail = parameters.get("detail") { name += "/\(detail)" }
        return name
    }

    /// The operation a name stands for; `users/caller` is the newer name of
    /// `users/current`.
    static func operation(named name: String) -> CloudOperation? {
        name == "users/caller" ? .currentUser : CloudOperation(rawValue: name)
    }

    /// Reads a database request's path.
    ///
    /// - Throws: ``HTTPFailure``: `NOT_FOUND` for no such operation, one
    ///   asked with `GET` that takes `POST`, or one on a database that does
    ///   not serve it; `BAD_REQUEST` for an unknown environment or database.
    init(_ request: Request, parameters: Parameters) throws(HTTPFailure) {
        let name = Self.operationName(in: parameters)
        guard let operation = Self.operation(named: name) else {
            throw HTTPFailure(.notFound, "No such operation: \(name).")
        }
        if request.method == .get && operation.httpMethod != "GET" {
            throw HTTPFailure(.notFound, "\(name) takes POST.")
        }
        guard let environment = parameters.get("environment").flatMap(CloudEnvironment.init(rawValue:)) else {
            throw HTTPFailure(.badRequest, "The environment must be development or production.")
        }
        guard let scope = parameters.get("scope").flatMap(DatabaseScope.init(rawValue:)) else {
            throw HTTPFailure(.badRequest, "The database must be public, private or shared.")
        }
        if let fixed = operation.fixedScope, fixed != scope {
            throw HTTPFailure(.notFound, "\(name) is served on the \(fixed.rawValue) database only.")
        }
        container = parameters.get("container") ?? ""
        self.environment = environment
        self.scope = scope
        self.operation = operation
    }
}
