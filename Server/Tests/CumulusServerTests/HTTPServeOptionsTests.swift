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

    @Test("the PostgreSQL limits default to the storage's and take seconds; zero, negative or malformed is refused")
    func postgresLimits() throws {
        #expect(try ServeCommand.parse([]).postgresLimits() == PostgresStorage.Limits())

        let set = try ServeCommand.parse([
            "--postgres-connection-wait", "2.5", "--postgres-statement-timeout", "0.25",
            "--postgres-transaction-timeout", "45",
        ]).postgresLimits()
        #expect(set.connectionWait == .milliseconds(2500))
        #expect(set.statementTimeout == .milliseconds(250))
        #expect(set.transactionTimeout == .seconds(45))
        #expect(set.retryAfter == PostgresStorage.Limits().retryAfter)
        // A positive value under a millisecond is still a positive limit.
        let tiny = try ServeCommand.parse(["--postgres-statement-timeout", "0.0001"]).postgresLimits()
        #expect(tiny.statementTimeout == .milliseconds(1))

        let options = ["--postgres-connection-wait", "--postgres-statement-timeout", "--postgres-transaction-timeout"]
        for option in options {
            for value in ["0", "-1", "-0.5", "soon", "1s", "nan", "inf", "86401"] {
                for arguments in [[option, value], ["\(option)=\(value)"]] {
                    do {
                        _ = try ServeCommand.parse(arguments)
                        Issue.record("\(arguments) was accepted")
                    } catch {
                        let message = ServeCommand.message(for: error)
                        #expect(message.contains(option), "\(arguments): \(message)")
                    }
                }
            }
        }
    }

    @Test("the asset options default to AssetSettings and take bytes and seconds; zero or negative is refused")
    func assetOptions() throws {
        let command = try ServeCommand.parse([])
        #expect(command.assetSettings() == AssetSettings())
        #expect(command.serverConfiguration(logger: quietLogger).assetCollectionInterval == .seconds(3600))

        let set = try ServeCommand.parse([
            "--max-asset-size", "1048576", "--asset-grace", "600", "--asset-url-lifetime", "90",
            "--asset-collection-interval", "30",
        ])
        #expect(
            set.assetSettings()
                == AssetSettings(
                    sizeLimit: 1_048_576, uploadLifetime: .seconds(90), downloadLifetime: .seconds(90),
                    gracePeriod: .seconds(600)))
        #expect(set.serverConfiguration(logger: quietLogger).assetCollectionInterval == .seconds(30))
        // A week of grace is allowed.
        #expect(try ServeCommand.parse(["--asset-grace", "604800"]).assetSettings().gracePeriod == .seconds(604_800))

        for option in ["--max-asset-size", "--asset-grace", "--asset-url-lifetime", "--asset-collection-interval"] {
            for value in ["0", "-1"] {
                #expect(throws: (any Error).self, "\(option) \(value)") { try ServeCommand.parse([option, value]) }
            }
        }
    }
}
