// Cumulus: sync Swift value types through a cloud record database.
//
// The model protocol, records and the record coders live in `CloudCodable`,
// which this module re-exports, so `import Cumulus` is all an app needs.

@_exported import CloudCodable
