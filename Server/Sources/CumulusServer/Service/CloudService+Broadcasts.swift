import CloudCodable
import CloudProtocol

extension CloudService {
    /// Wakes this server's polls for another server's write (or for every
    /// database, when announcements may have been lost): each poll reads
    /// its channel's changes from storage, so nothing is read here. A
    /// credential change, or a possibly missed one, moves the credentials
    /// version on, so that the HTTP layer asks the store again.
    func receive(_ event: ChangeBroadcastEvent) async {
        switch event {
        case .changed(let announcement):
            rules.wakeChannels(of: announcement.key)
        case .mayHaveMissed:
            noteCredentialChange()
            rules.wakeAllChannels()
        case .credentialsChanged:
            noteCredentialChange()
        }
    }
}
