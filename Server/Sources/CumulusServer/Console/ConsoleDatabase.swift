import CloudCodable
import CloudProtocol
import CumulusServerCore

/// The database a console page looks at, and the user it looks as: what
/// the page's query names, checked, and how links carry it on.
struct ConsoleDatabase: Sendable {
    var container: String
    var environment: CloudEnvironment
    var scope: DatabaseScope
    /// The record name of the user whose requests the page makes.
    var user: String

    /// The database the query names; a missing or unknown part is refused.
    init(_ query: [String: String]) throws {
        guard let container = query["container"], !container.isEmpty, let user = query["user"], !user.isEmpty,
            let environment = query["environment"].flatMap(CloudEnvironment.init(rawValue:)),
            let scope = query["scope"].flatMap(DatabaseScope.init(rawValue:))
        else {
            throw ConsoleFailure(.badRequest, "The link does not name a container, environment, database and user.")
        }
        self.container = container
        self.environment = environment
        self.scope = scope
        self.user = user
    }

    init(container: String, environment: CloudEnvironment, scope: DatabaseScope, user: String) {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.user = user
    }

    /// The user as the record service sees a request of theirs to this database.
    var caller: Caller {
        Caller(container: container, environment: environment, scope: scope, user: user)
    }

    /// The parameters that name this database in a link.
    var parameters: [(String, String)] {
        [("container", container), ("environment", environment.rawValue), ("scope", scope.rawValue), ("user", user)]
    }

    /// A zone of this database: in the shared database, `owner`'s zone.
    func zoneID(_ query: [String: String]) throws -> ZoneID {
        guard let zone = query["zone"], !zone.isEmpty else {
            throw ConsoleFailure(.badRequest, "The link does not name a zone.")
        }
        let owner = query["owner"].flatMap { $0.isEmpty ? nil : $0 }
        return ZoneID(zoneName: zone, ownerRecordName: scope == .shared ? owner : nil)
    }

    /// The parameters that name a zone of this database in a link.
    func parameters(zone: ZoneID) -> [(String, String)] {
        parameters + [("zone", zone.zoneName), ("owner", zone.namedOwner ?? "")]
    }

    /// The user whose own `records/modify` changes a record of `zone`: the
    /// zone's owner in a shared database, the record's creator in the
    /// public one, else the user looked as; with the database that request goes to.
    func writer(of record: Record, zone: ZoneID) -> (caller: Caller, zoneID: ZoneID) {
        switch scope {
        case .private:
            return (caller, ZoneID(zoneName: zone.zoneName))
        case .shared:
            let owner = zone.namedOwner ?? user
            let caller = Caller(container: container, environment: environment, scope: .private, user: owner)
            return (caller, ZoneID(zoneName: zone.zoneName))
        case .public:
            let creator = record.metadata?.created?.userRecordName ?? user
            let caller = Caller(container: container, environment: environment, scope: .public, user: creator)
            return (caller, zone)
        }
    }
}
