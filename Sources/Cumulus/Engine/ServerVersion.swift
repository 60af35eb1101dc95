import CloudCodable
import CloudProtocol

/// The last version of a record that this device saw on the server: the
/// ancestor of merges, and the change tag that local changes build on.
///
/// The record itself is kept only as its wire JSON, the very buffer that is
/// its journal document, so the replica costs one copy of each record plus
/// its model; ``record()`` parses it again on the rare paths that need it
/// (conflicts, a zone created again). A class, so that the replica's
/// tables and the walks over them share one instance rather than copying
/// the JSON, the metadata and the model each time.
final class ServerVersion<Model: CloudCodable>: Sendable {
    /// The record as wire JSON, shared with the journal's document.
    let json: [UInt8]
    /// The record's server metadata.
    let metadata: RecordMetadata?
    /// The record as a model, or `nil` when it does not decode as one.
    let model: Model?

    init(json: [UInt8], metadata: RecordMetadata?, model: Model?) {
        self.json = json
        self.metadata = metadata
        self.model = model
    }

    /// The record, parsed from its JSON.
    func record() throws -> Record {
        try WireFormat.decodeRecord(from: json)
    }
}
