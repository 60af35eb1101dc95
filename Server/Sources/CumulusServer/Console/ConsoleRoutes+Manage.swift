import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging

extension ConsoleRoutes {
    func addManage(to console: RouterGroup<CumulusRequestContext>) {
        console.get("delete-zone") { request, _ in try await page(request) { try await confirmDeleteZone($0, $1) } }
        console.post("delete-zone") { request, _ in try await change(request) { try await deleteZone($0, $1) } }
        console.get("revoke-token") { request, _ in try await page(request) { try await confirmRevoke($0, $1) } }
        console.post("revoke-token") { request, _ in try await change(request) { try await revoke($0, $1) } }
        console.get("remove-user") { request, _ in try await page(request) { try await confirmRemoveUser($0, $1) } }
        console.post("remove-user") { request, _ in try await change(request) { try await removeUser($0, $1) } }
    }

    // MARK: Zones

    /// The zone a delete names: a zone of the user's own private database,
    /// the only database where a user's `zones/modify` deletes a zone.
    private func zoneToDelete(_ query: [String: String]) throws -> (ConsoleDatabase, ZoneID) {
        let database = try ConsoleDatabase(query)
        guard database.scope == .private else {
            throw ConsoleFailure(.badRequest, "Only a zone of its owner's private database can be deleted.")
        }
        return (database, ZoneID(zoneName: try database.zoneID(query).zoneName))
    }

    private func confirmDeleteZone(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let (database, zoneID) = try zoneToDelete(query)
        // The zone as its owner's zones/list shows it: a missing zone is said so before any form.
        guard case .zones(let zones) = try await service.perform(.listZones, as: database.caller) else {
            throw ConsoleFailure(.internalServerError, "zones/list answered something else.")
        }
        let back = ConsoleLinks.link("/console/zones", database.parameters)
        guard zones.contains(where: { $0.zoneID.zoneName.isExactly(zoneID.zoneName) }) else {
            throw ConsoleFailure(.notFound, "The user has no zone of this name.", back: back)
        }
        var values = Self.databaseValues(database)
        values["zone"] = zoneID.zoneName
        values["csrf"] = session.csrfToken
        values["back"] = back
        values["hidden"] = Self.hiddenFields(database.parameters + [("zone", zoneID.zoneName)])
        return html(.ok, pages.render("confirmDeleteZone", title: "Delete a zone", session: session, values))
    }

    /// Deletes the zone as its owner's own `zones/modify`: the protocol's
    /// rules do the rest (its records go, devices are told, the
    /// participants of its shares lose it).
    private func deleteZone(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let (database, zoneID) = try zoneToDelete(form)
        let back = ConsoleLinks.link("/console/zones", database.parameters)
        guard
            case .zoneResults(let results) = try await service.perform(
                .modifyZones([.delete(zoneID)]), as: database.caller)
        else { throw ConsoleFailure(.internalServerError, "zones/modify answered something else.", back: back) }
        if case .failure(let error)? = results.first {
            throw ConsoleFailure(.conflict, "\(error.code.rawValue): \(error.reason)", back: back)
        }
        logger.notice(
            "console deleted a zone",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(database.container)",
                "environment": "\(database.environment.rawValue)", "owner": "\(database.user)",
                "zone": "\(zoneID.zoneName)",
            ])
        let values: [String: Any] = ["text": "Deleted zone \(zoneID.zoneName) of \(database.user).", "back": back]
        return html(.ok, pages.render("message", title: "Zone deleted", session: session, values))
    }

    // MARK: Tokens

    /// The user a page names by container and name, as `users(container:)` lists them.
    private func userAccount(_ query: [String: String]) async throws -> (String, StoredUserAccount) {
        guard let container = query["container"], !container.isEmpty, let name = query["name"], !name.isEmpty else {
            throw ConsoleFailure(.badRequest, "The link does not name a container and a user.")
        }
        guard let account = try await service.users(container: container).first(where: { $0.name.isExactly(name) })
        else { throw ConsoleFailure(.notFound, "No user of this name in the container.") }
        return (container, account)
    }

    /// The token a revoke names, checked to be one of the named user's:
    /// an ID of another user's token is refused, not revoked.
    private func tokenToRevoke(_ query: [String: String]) async throws -> (String, StoredUserAccount, StoredUserToken) {
        let (container, account) = try await userAccount(query)
        let tokens = try await service.webAuthTokens(ofUser: account.name, container: container)
        guard let id = query["id"], let token = tokens.first(where: { $0.id.isExactly(id) }) else {
            throw ConsoleFailure(
                .notFound, "The user has no web auth token with this ID.", back: userLink(container, account))
        }
        return (container, account, token)
    }

    private func confirmRevoke(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let (container, account, token) = try await tokenToRevoke(query)
        let values: [String: Any] = [
            "container": container, "name": account.name, "id": token.id, "csrf": session.csrfToken,
            "created": Self.date(milliseconds: token.created), "back": userLink(container, account),
            "hidden": Self.hiddenFields([("container", container), ("name", account.name), ("id", token.id)]),
        ]
        return html(.ok, pages.render("confirmRevokeToken", title: "Revoke a token", session: session, values))
    }

    /// Revokes the token as `cumulus token revoke --id` does: it fails on every server at once.
    private func revoke(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let (container, account, token) = try await tokenToRevoke(form)
        let revoked = try await service.revokeWebAuthToken(id: token.id, container: container)
        logger.notice(
            "console revoked a web auth token",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(container)",
                "user": "\(revoked.userRecordName)", "tokenID": "\(revoked.id)",
            ])
        let values: [String: Any] = [
            "text": "Revoked token \(revoked.id) of \(account.name).", "back": userLink(container, account),
        ]
        return html(.ok, pages.render("message", title: "Token revoked", session: session, values))
    }

    // MARK: Users

    private func confirmRemoveUser(_ session: ConsoleSession, _ query: [String: String]) async throws -> Response {
        let (container, account) = try await userAccount(query)
        let values: [String: Any] = [
            "container": container, "name": account.name, "recordName": account.recordName,
            "tokens": account.activeTokens, "csrf": session.csrfToken, "back": userLink(container, account),
            "identities": account.identities.map { ["issuer": $0.issuer, "subject": $0.subject] },
            "hasIdentities": !account.identities.isEmpty,
            "hidden": Self.hiddenFields([("container", container), ("name", account.name)]),
        ]
        return html(.ok, pages.render("confirmRemoveUser", title: "Remove a user", session: session, values))
    }

    /// Removes the user as `cumulus user remove` does, after blocking the
    /// identities they sign in with when asked (as `cumulus user block`):
    /// removal forgets the identities, so without a block the provider's
    /// next token makes a new user.
    private func removeUser(_ session: ConsoleSession, _ form: [String: String]) async throws -> Response {
        let (container, account) = try await userAccount(form)
        let back = userLink(container, account)
        guard let data = form["data"], data == "keep" || data == "delete" else {
            throw ConsoleFailure(.badRequest, "Say what happens to the user's data: nothing was changed.", back: back)
        }
        var blocked = 0
        if form["block"] == "yes" {
            for identity in account.identities {
                try await service.blockIdentity(
                    issuer: identity.issuer, subject: identity.subject, container: container)
                blocked += 1
            }
        }
        let removed = try await service.removeUser(
            named: account.name, container: container, deletingData: data == "delete")
        logger.notice(
            "console removed a user",
            metadata: [
                "consoleToken": "\(session.tokenID)", "container": "\(container)", "user": "\(removed.recordName)",
                "deletedData": "\(removed.deletion != nil)", "revokedTokens": "\(removed.revokedTokens)",
                "blockedIdentities": "\(blocked)",
            ])
        var text =
            "Removed user \(account.name) (\(removed.recordName)): revoked \(removed.revokedTokens) web auth tokens"
        if blocked > 0 { text += ", blocked \(blocked) identities" }
        if let deletion = removed.deletion {
            text +=
                "; deleted \(deletion.zones) zones, \(deletion.publicRecords) public records and "
                + "\(deletion.subscriptions) subscriptions, and left \(deletion.sharesLeft) shares."
        } else {
            text += "; kept the data."
        }
        let users = ConsoleLinks.link("/console/users", [("container", container)])
        return html(
            .ok, pages.render("message", title: "User removed", session: session, ["text": text, "back": users]))
    }

    private func userLink(_ container: String, _ account: StoredUserAccount) -> String {
        ConsoleLinks.link("/console/user", [("container", container), ("name", account.name)])
    }

    /// Hidden inputs that name again, when a form is posted, what its page showed.
    static func hiddenFields(_ parameters: [(String, String)]) -> [[String: String]] {
        parameters.map { ["name": $0.0, "value": $0.1] }
    }
}

extension ConsoleRoutes {
    // The links other pages show to this part's pages.

    /// The link to revoke one of a user's tokens, for the user page.
    static func revokeLink(container: String, user: String, token id: String) -> String {
        ConsoleLinks.link("/console/revoke-token", [("container", container), ("name", user), ("id", id)])
    }

    /// The link to remove a user, for the user page.
    static func removeLink(container: String, user: String) -> String {
        ConsoleLinks.link("/console/remove-user", [("container", container), ("name", user)])
    }

    /// The link to delete a zone, for the zones page: only a private
    /// database's zones are their owner's to delete, and not its default
    /// zone, which `zones/modify` refuses to delete. `false` when there is
    /// none: a Mustache section shows for any string, the empty one too.
    static func deleteZoneLink(_ database: ConsoleDatabase, _ zoneID: ZoneID) -> Any {
        guard database.scope == .private, !zoneID.zoneName.isExactly(ZoneID.defaultZone.zoneName) else { return false }
        return ConsoleLinks.link("/console/delete-zone", database.parameters(zone: zoneID))
    }
}
