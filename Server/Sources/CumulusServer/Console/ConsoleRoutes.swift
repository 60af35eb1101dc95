import CloudCodable
import CloudProtocol
import CumulusServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// The operator's console under `/console`: sign-in with a console token,
/// then pages that read and change users' data through the record
/// service's own requests, made as the user concerned.
///
/// Every page but the sign-in page and the stylesheet needs a session;
/// every change is a POST that carries the session's CSRF token; a GET
/// changes nothing.
struct ConsoleRoutes: Sendable {
    let service: CloudService
    let sessions: ConsoleSessions
    let pages = ConsolePages()
    let failures: RecentFailures
    /// Whether the cookie is `Secure`: the server speaks TLS.
    let secureCookie: Bool
    let logger: Logger
    /// The server's requests, for the load page.
    let load: RequestLoad

    /// The session cookie's name.
    static let cookieName = "cumulus_console"
    /// The largest form body read.
    static let maximumFormSize = 64 * 1024

    func add(to router: Router<CumulusRequestContext>) {
        let console = router.group("console").add(middleware: ConsoleResponseMiddleware(pages: pages, logger: logger))
        console.get { request, _ in try await home(request) }
        console.get("style.css") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/css; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: ConsoleTemplates.stylesheet)))
        }
        console.get("sign-in") { request, _ in
            if try await currentSession(request) != nil { return Self.redirect(to: "/console") }
            return html(.ok, pages.render("signIn", title: "Sign in", session: nil))
        }
        console.post("sign-in") { request, _ in try await signIn(request) }
        console.post("sign-out") { request, _ in
            try await change(request) { session, _ in
                sessions.end(id: session.id)
                logger.notice("console sign-out", metadata: ["consoleToken": "\(session.tokenID)"])
                var response = Self.redirect(to: "/console/sign-in")
                response.headers[.setCookie] = cookie(value: "", maxAge: 0)
                return response
            }
        }
        addBrowsing(to: console)
        addChanges(to: console)
        addSchema(to: console)
        addQuery(to: console)
        addManage(to: console)
        addExport(to: console)
        addSharing(to: console)
        addLoad(to: console)
        console.get("failures") { request, _ in
            try await page(request) { session, query in failuresPage(session: session, query: query) }
        }
        // Any other path under /console is a console page too: it carries the console's headers.
        console.get("**") { _, _ -> Response in throw ConsoleFailure(.notFound, "No such console page.") }
        console.post("**") { _, _ -> Response in throw ConsoleFailure(.notFound, "No such console page.") }
    }

    // MARK: Sessions

    /// The session the request's cookie names, if it is live.
    func currentSession(_ request: Request) async throws -> ConsoleSession? {
        guard let id = request.cookies[Self.cookieName]?.value, !id.isEmpty else { return nil }
        return try await sessions.session(id: id)
    }

    /// A page that needs a session: without one, a redirect to sign in.
    func page(_ request: Request, _ body: (ConsoleSession, [String: String]) async throws -> Response)
        async throws -> Response
    {
        guard let session = try await currentSession(request) else { return Self.redirect(to: "/console/sign-in") }
        return try await body(session, ConsoleLinks.parameters(request.uri.query ?? ""))
    }

    /// A change: a POST with a session whose form carries the session's
    /// CSRF token; anything else is refused before the change is looked at.
    /// A form larger than `maximumSize` is refused.
    func change(
        _ request: Request, maximumSize: Int = maximumFormSize,
        _ body: (ConsoleSession, [String: String]) async throws -> Response
    ) async throws -> Response {
        guard let session = try await currentSession(request) else {
            throw ConsoleFailure(.unauthorized, "Sign in first: this change was not made.")
        }
        let form = try await Self.form(request, upTo: maximumSize)
        guard ServerSecrets.constantTimeEquals(form["csrf"] ?? "", session.csrfToken) else {
            logger.warning(
                "console change refused: no or a wrong CSRF token", metadata: ["consoleToken": "\(session.tokenID)"])
            throw ConsoleFailure(
                .forbidden, "This form is out of date or did not come from the console: nothing was changed.")
        }
        return try await body(session, form)
    }

    private func home(_ request: Request) async throws -> Response {
        try await page(request) { session, _ in
            html(.ok, pages.render("home", title: "Home", session: session, try await homeValues()))
        }
    }

    private func signIn(_ request: Request) async throws -> Response {
        let form = try await Self.form(request)
        guard let token = form["token"]?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty,
            let session = try await sessions.signIn(token: token)
        else {
            logger.warning("console sign-in refused")
            let page = pages.render(
                "signIn", title: "Sign in", session: nil, ["error": "That is not a console token of this server."])
            return html(.unauthorized, page)
        }
        logger.notice("console sign-in", metadata: ["consoleToken": "\(session.tokenID)"])
        var response = Self.redirect(to: "/console")
        response.headers[.setCookie] = cookie(value: session.id, maxAge: nil)
        return response
    }

    /// The session cookie: only for the console's paths, never sent by
    /// another site's request or readable by a script.
    func cookie(value: String, maxAge: Int?) -> String {
        var text = "\(Self.cookieName)=\(value); Path=/console; HttpOnly; SameSite=Strict"
        if let maxAge { text += "; Max-Age=\(maxAge)" }
        if secureCookie { text += "; Secure" }
        return text
    }

    // MARK: Answers

    func html(_ status: HTTPResponse.Status, _ page: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
    }

    static func redirect(to location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    /// The fields of a POSTed form.
    static func form(_ request: Request, upTo maximumSize: Int = maximumFormSize) async throws -> [String: String] {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maximumSize)
        } catch {
            throw ConsoleFailure(.contentTooLarge, "The form is too large.")
        }
        return ConsoleLinks.parameters(String(buffer: buffer))
    }
}

/// A console request refused, with the words its page shows.
struct ConsoleFailure: Error {
    var status: HTTPResponse.Status
    var message: String
    var back: String?

    init(_ status: HTTPResponse.Status, _ message: String, back: String? = nil) {
        self.status = status
        self.message = message
        self.back = back
    }
}

/// The console's outer layer: the security headers on every answer, and
/// every failure as a page (never the protocol's error dictionary).
struct ConsoleResponseMiddleware: RouterMiddleware {
    typealias Context = CumulusRequestContext
    let pages: ConsolePages
    let logger: Logger

    /// No script, no frame, no form to elsewhere; only the console's stylesheet and images load.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let failure as ConsoleFailure {
            response = page(failure.status, failure.message, back: failure.back)
        } catch let error as CloudError {
            response = page(.init(code: error.httpStatus), "\(error.code.rawValue): \(error.reason)")
        } catch {
            let uuid = UUID().uuidString
            logger.error("console page failed", metadata: ["uuid": "\(uuid)", "error": "\(String(reflecting: error))"])
            response = page(.internalServerError, "The console failed (uuid \(uuid)).")
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        response.headers[.cacheControl] = "no-store"
        return response
    }

    private func page(_ status: HTTPResponse.Status, _ text: String, back: String? = nil) -> Response {
        var values: [String: Any] = ["text": text, "isError": true]
        if let back { values["back"] = back }
        let html = pages.render("message", title: status.reasonPhrase, session: nil, values)
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }
}
