import CloudCodable
import CloudProtocol

extension ServiceAnswer {
    /// How many records the answer carries: the successful results of
    /// `records/modify` and `records/lookup` (deletions included), a
    /// query's records, and the entries of pages of changes. Failed
    /// results are not counted; for metrics, which cannot see the form.
    public var recordCount: Int {
        switch form {
        case .response(let response):
            switch response {
            case .records(let results):
                return results.reduce(0) { count, result in result.error == nil ? count + 1 : count }
            case .query(let page):
                return page.records.count
            case .zoneChanges(let zones):
                return zones.reduce(0) { count, zone in count + ((try? zone.get().records.count) ?? 0) }
            case .recordChanges(let changes):
                return changes.records.count
            default:
                return 0
            }
        case .zoneChanges(let pages):
            return pages.reduce(0) { count, page in count + ((try? page.get().entries.count) ?? 0) }
        case .recordChanges(let page):
            return page.entries.count
        }
    }
}
