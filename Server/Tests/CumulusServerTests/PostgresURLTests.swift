import Cumulus
import CumulusServer
import Testing

@Suite("PostgreSQL URLs")
struct PostgresURLTests {
    @Test("a full URL gives every part; the description hides the password")
    func fullURL() throws {
        let url = try PostgresURL("postgres://cumulus:s%40cret@db.example.com:6543/records?sslmode=require")
        #expect(url.username == "cumulus" && url.password == "s@cret")
        #expect(url.host == "db.example.com" && url.port == 6543 && url.database == "records")
        #expect(url.tls == .require)
        #expect(!url.description.contains("s@cret") && !url.description.contains("cret"))
        #expect(url.description.contains("db.example.com"))
    }

    @Test("defaults: port 5432, the database named after the user, TLS when offered")
    func defaults() throws {
        let url = try PostgresURL("postgresql://alice@localhost")
        #expect(url.port == 5432 && url.database == "alice" && url.tls == .prefer && url.password == nil)
        #expect(try PostgresURL("postgres://a@h/d?sslmode=disable").tls == .disable)
    }

    @Test(
        "malformed URLs are BAD_REQUEST naming the problem, never the password",
        arguments: [
            "mysql://u:pw1@h/d", "postgres://:pw1@h/d", "postgres://u:pw1@/d", "postgres://u:pw1@h/d?sslmode=maybe",
            "postgres://u:pw1@h/d?color=red", "not a url",
        ])
    func malformed(text: String) {
        do {
            _ = try PostgresURL(text)
            Issue.record("\(text) was accepted")
        } catch let error as CloudError {
            #expect(error.code == .badRequest)
            #expect(!error.reason.contains("pw1"))
        } catch {
            Issue.record("\(error)")
        }
    }
}
