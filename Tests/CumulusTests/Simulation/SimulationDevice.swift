import Cumulus
import CumulusTesting
import Foundation

/// One simulated device: its handle on the server, its journal directory,
/// the engine open on it, and what its app keeps on screen.
final class SimulationDevice {
    let index: Int
    let handle: InMemoryCloudDatabase
    let directory: URL
    var engine: (any SimulatedEngine)?
    /// The version of the app the device runs (1 to 3); it only goes up.
    var version = 1
    var events: EventLog?
    /// Events of ``events`` already looked at.
    var eventsRead = 0
    /// Runs of `sync()` that ended on this engine instance.
    var runs = 0
    /// Waits of this engine instance's runs so far.
    var waits = 0
    var offline = false
    /// The user the engine's data belongs to, as far as its syncs and
    /// events tell: an app names new records after it, and creates none
    /// before the engine has seen a user (it would adopt whoever comes first).
    var engineUser: String?
    /// How many times the device's user changed (sign-ins and sign-outs).
    var accountChanges = 0
    /// The user and the start of the last sync that succeeded and left
    /// nothing pending: what this device has seen of the server.
    var lastSync: (user: String, tick: Int)?
    /// Successful syncs so far, to age the copies on screen.
    var syncCount = 0
    /// Copies the app keeps on screen (a detail view), with the sync count
    /// they were taken at; only unedited engine copies, taken with nothing pending.
    var screens: [String: (note: SimNote, takenAt: Int)] = [:]
    /// For each record and field, the value before this device's last edit of it.
    var lastEdits: [String: [SimField: String]] = [:]
    /// In a history with shares, the participant this device belongs to
    /// (its handle is on their shared database); `nil` on the owner's devices.
    var participant: String?
    /// The shared zone the participant's engine syncs, once they accepted a share of it.
    var sharedZone: ZoneID?
    /// The participant's handle on the public database, which accepts shares.
    var publicHandle: InMemoryCloudDatabase?
    /// When the last sync that succeeded on this device started.
    var lastSuccessfulSync: Int?
    /// When the app last wrote each record on this participant's device.
    var localWrites: [String: Int] = [:]
    /// The records this engine instance reported undecodable, with the
    /// server's change tag of each when it did.
    var undecodableReported: [String: String] = [:]
    /// The versions of the app whose writes the engine may still hold
    /// queued: an edit made by version 2 and sent after the update to
    /// version 3 changes the fields version 2 declares. Emptied after the
    /// check of a step whose sync left nothing pending (``queueDrained``).
    var queuedVersions: Set<Int> = []
    var queueDrained = false
    /// Whether the device's engines send field deltas; one that does not
    /// sends every edit as a full `replace`, which must carry the fields
    /// its model does not declare.
    var sendsFieldDeltas = true
    /// The history's key the device's engines write the encrypted field
    /// with (``SimulationKeys/all``); it moves on when the device rotates.
    var currentKey = 0
    /// For each record, the mark (local-only) the device's app last
    /// uploaded it with, `nil` for none: its engine must show it while it
    /// holds the record. Kept through restarts; forgotten once the device
    /// no longer holds the record, or its engine drops everything (another
    /// user, a lost share).
    var marks: [String: String?] = [:]

    init(index: Int, handle: InMemoryCloudDatabase, directory: URL) {
        self.index = index
        self.handle = handle
        self.directory = directory
    }

    /// The app forgets what it kept of `identifier` (it wrote the record).
    func forget(_ identifier: String) {
        screens[identifier] = nil
    }

    /// The prefix of every mark this device's app writes: marks name their device.
    var markPrefix: String { "d\(index)." }

    /// The app forgets everything it kept (a restart or another user).
    func forgetAll() {
        screens.removeAll()
        lastEdits.removeAll()
    }
}
