import CloudCodable
import CloudProtocol
import Logging
import ServiceLifecycle

/// Runs ``CloudServing/collectAssets()`` when the server starts and then
/// every `interval`, until the server shuts down.
///
/// Several servers on one PostgreSQL database each run one: collecting is
/// safe to run concurrently (what one deletes, the other finds gone), and
/// a random part of the interval keeps them from running in step.
struct AssetCollector: Service {
    let service: any CloudServing
    let interval: Duration
    let logger: Logger

    func run() async throws {
        var pause = Duration.zero
        while !Task.isCancelled {
            let wait = pause
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: wait) }
            } catch {
                return
            }
            await collect()
            pause = interval + interval * Double.random(in: 0..<0.1)
        }
    }

    func collect() async {
        do {
            let collection = try await service.collectAssets()
            if !collection.deletedAssets.isEmpty || !collection.deletedDebris.isEmpty {
                logger.info(
                    "collected assets",
                    metadata: [
                        "assets": "\(collection.deletedAssets.count)", "debris": "\(collection.deletedDebris.count)",
                    ])
            }
        } catch {
            // The next run tries again; a storage that keeps no assets is no failure.
            if (error as? CloudError)?.code != .unsupported {
                logger.warning("collecting assets failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
