import CumulusServer
import Foundation
import Testing

@Suite("Console sign-in and sessions")
struct ConsoleSignInTests {
    static let pages = [
        "/console", "/console/", "/console/users?container=iCloud.com.example.conformance", "/console/failures",
        "/console/zones?container=c&environment=development&scope=private&user=u",
        "/console/record?container=c&environment=development&scope=private&user=u&zone=z&record=r",
    ]

    @Test("every page without a session, or with an unknown one, redirects to sign-in")
    func pagesNeedASession() async throws {
        try await ConsoleTestServer.with { server in
            for page in Self.pages {
                for session in [nil, "0123456789abcdef", ""] as [String?] {
                    let answer = try await server.get(page, session: session)
                    #expect(answer.status == 303, "\(page)")
                    #expect(answer.headers["Location"].first == "/console/sign-in", "\(page)")
                    #expect(!answer.body.contains("Sign out"))
                }
            }
            let session = try await server.signIn()
            for page in Self.pages.prefix(4) {
                #expect(try await server.get(page, session: session).status == 200, "\(page)")
            }
        }
    }

    @Test("a wrong token is refused, and revoking a token ends its sessions and its sign-ins")
    func wrongAndRevokedTokens() async throws {
        try await ConsoleTestServer.with { server in
            for wrong in [
                "", "nope", String(server.token.dropLast()) + (server.token.hasSuffix("0") ? "1" : "0"),
                server.token.uppercased(),
            ] {
                let answer = try await server.send(.POST, "/console/sign-in", form: [("token", wrong)])
                #expect(answer.status == 401, "\(wrong)")
                #expect(answer.headers["Set-Cookie"].isEmpty)
            }
            let session = try await server.signIn()
            #expect(try await server.get("/console", session: session).status == 200)
            let id = try #require(try await server.service.consoleTokens().first?.id)
            #expect(try await server.service.revokeConsoleToken(id: id) != nil)
            let after = try await server.get("/console", session: session)
            #expect(after.status == 303 && after.headers["Location"].first == "/console/sign-in")
            let again = try await server.send(.POST, "/console/sign-in", form: [("token", server.token)])
            #expect(again.status == 401)
        }
    }

    @Test("signing out ends the session; the cookie is HttpOnly, SameSite=Strict, for /console only")
    func signOutAndCookie() async throws {
        try await ConsoleTestServer.with { server in
            let answer = try await server.send(.POST, "/console/sign-in", form: [("token", server.token)])
            let cookie = try #require(answer.headers["Set-Cookie"].first)
            let attributes = Set(
                cookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes.isSuperset(of: ["HttpOnly", "SameSite=Strict", "Path=/console"]))
            #expect(!attributes.contains("Secure"), "plain HTTP: a Secure cookie would never come back")
            let session = try await server.signIn()
            let csrf = try await server.csrf(session: session)
            let out = try await server.send(.POST, "/console/sign-out", session: session, form: [("csrf", csrf)])
            #expect(out.status == 303)
            #expect(try await server.get("/console", session: session).status == 303)
        }
    }

    @Test("every console answer carries the security headers, the stylesheet and refusals too")
    func securityHeaders() async throws {
        try await ConsoleTestServer.with { server in
            let session = try await server.signIn()
            let answers = [
                try await server.get("/console/sign-in"), try await server.get("/console", session: session),
                try await server.get("/console/style.css"),
                try await server.get("/console/nothing-here", session: session),
                try await server.send(.POST, "/console/sign-in", form: [("token", "wrong")]),
                try await server.send(.POST, "/console/edit", session: session, form: []),
                try await server.get("/console/users?container=no.such.container", session: session),
            ]
            for answer in answers {
                #expect(
                    answer.headers["Content-Security-Policy"].first
                        == "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                        + "frame-ancestors 'none'; base-uri 'none'")
                #expect(answer.headers["X-Content-Type-Options"].first == "nosniff")
                #expect(answer.headers["Referrer-Policy"].first == "no-referrer")
                #expect(answer.headers["Cache-Control"].first == "no-store")
            }
            #expect(answers[2].status == 200 && answers[2].headers["Content-Type"].first?.hasPrefix("text/css") == true)
            #expect(answers[3].status == 404)
            #expect(!answers.contains { $0.body.contains("<script") })
        }
    }

    @Test("a session ends after its idle limit and its lifetime")
    func sessionExpiry() async throws {
        try await ConsoleTestServer.with { server in
            let clock = TestWallClock()
            let sessions = ConsoleSessions(
                configuration: ConsoleConfiguration(
                    sessionLifetime: .seconds(3600), sessionIdleLimit: .seconds(600), now: clock.now),
                service: server.service)
            let idle = try #require(try await sessions.signIn(token: server.token))
            clock.advance(by: 599)
            #expect(try await sessions.session(id: idle.id) != nil)
            clock.advance(by: 601)
            #expect(try await sessions.session(id: idle.id) == nil)
            let busy = try #require(try await sessions.signIn(token: server.token))
            for _ in 0..<7 {
                clock.advance(by: 500)
                #expect(try await sessions.session(id: busy.id) != nil)
            }
            clock.advance(by: 200)
            #expect(try await sessions.session(id: busy.id) == nil, "past its 3600 s lifetime however busy")
            #expect(try await sessions.signIn(token: "wrong") == nil)
        }
    }
}
