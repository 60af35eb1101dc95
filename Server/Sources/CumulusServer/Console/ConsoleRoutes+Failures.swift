import Foundation
import Hummingbird

extension ConsoleRoutes {
    /// The recent failed requests, or the one whose `uuid` is asked.
    func failuresPage(session: ConsoleSession, query: [String: String]) -> Response {
        let uuid = query["uuid"]?.trimmingCharacters(in: .whitespaces) ?? ""
        let found = uuid.isEmpty ? failures.all : failures.failure(uuid: uuid).map { [$0] } ?? []
        let rows = found.map { failure -> [String: Any] in
            [
                "date": failure.date.ISO8601Format(), "uuid": failure.uuid, "request": failure.request,
                "operation": failure.operation ?? "", "user": failure.user ?? "", "status": failure.status,
                "code": failure.code, "reason": failure.reason,
            ]
        }
        let values: [String: Any] = ["uuid": uuid, "failures": rows, "capacity": failures.capacity]
        return html(.ok, pages.render("failures", title: "Failed requests", session: session, values))
    }
}
