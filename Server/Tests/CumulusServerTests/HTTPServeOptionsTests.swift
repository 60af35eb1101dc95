import ArgumentParser
import CumulusServer
import Testing

@testable import cumulus

@Suite("HTTP options of cumulus serve")
struct HTTPServeOptionsTests {
    @Test("the timeouts default to the configuration's and take seconds; zero or negative is refused")
    func timeouts() throws {
        let defaults = try ServeCommand.parse([]).serverConfiguration(logger: quietLogger)
        #expect(defaults.requestHeadTimeout == ServerConfiguration(logger: quietLogger).requestHeadTimeout)
        #expect(defaults.requestBodyTimeout == ServerConfiguration(logger: quietLogger).requestBodyTimeout)
        #expect(defaults.idleConnectionTimeout == ServerConfiguration(logger: quietLogger).idleConnectionTimeout)

        let set = try ServeCommand.parse(["--header-timeout", "2.5", "--body-timeout", "30", "--idle-timeout", "5"])
            .serverConfiguration(logger: quietLogger)
        #expect(set.requestHeadTimeout == .milliseconds(2500))
        #expect(set.requestBodyTimeout == .seconds(30))
        #expect(set.idleConnectionTimeout == .seconds(5))

        for option in ["--header-timeout", "--body-timeout", "--idle-timeout"] {
            #expect(throws: (any Error).self) { try ServeCommand.parse([option, "0"]) }
            #expect(throws: (any Error).self) { try ServeCommand.parse([option, "-1"]) }
        }
    }
}
