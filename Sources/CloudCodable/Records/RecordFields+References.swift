extension RecordFields {
    /// The references of the fields (single and in lists), with their
    /// fields' names. Only reference fields are read: the others stay in
    /// their wire form.
    package var references: [(field: String, reference: Reference)] {
        var found: [(field: String, reference: Reference)] = []
        for position in indices {
            switch type(at: position) {
            case .reference, .referenceList:
                switch self[position] {
                case (let field, .reference(let reference)): found.append((field, reference))
                case (let field, .referenceList(let list)): found += list.map { (field, $0) }
                default: break
                }
            default: continue
            }
        }
        return found
    }
}
