import Cumulus
import CumulusServerCore

extension InMemoryCloudServer {
    /// Tells the listeners of a database that zones changed.
    ///
    /// Every handle signed in to the database, in its environment, with a
    /// stream open hears, before the write's answer returns, what the notice
    /// says its user hears (``ChangeNotice/notifications(for:)``). The
    /// handle that wrote hears it too.
    static func deliver(_ notice: ChangeNotice, to controls: ServerControls) {
        let scope = notice.key.scope
        for listener in controls.listeners(in: scope, environment: notice.key.environment)
        where scope == .public || listener.account.isExactly(notice.key.owner) {
            let notifications = notice.notifications(for: listener.account)
            for stream in listener.streams {
                for notification in notifications { stream.yield(notification) }
            }
        }
    }
}
