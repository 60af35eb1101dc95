// Cumulus: sync Swift value types through a cloud record database.
//
// The model protocol, records and the record coders live in `CloudCodable`,
// which this module re-exports: an app imports Cumulus (and Foundation for
// types such as `UUID` and `Date`).

@_exported import CloudCodable
