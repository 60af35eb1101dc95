import Cumulus

extension CloudService {
    /// Wakes this server's polls for another server's write (or for every
    /// database, when announcements may have been lost): each poll reads
    /// its channel's changes from storage, so nothing is read here.
    func receive(_ event: ChangeBroadcastEvent) async {
        switch event {
        case .changed(let announcement):
            rules.wakeChannels(of: announcement.key)
        case .mayHaveMissed:
            rules.wakeAllChannels()
        }
    }
}
