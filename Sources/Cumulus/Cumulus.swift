// Cumulus: sync Swift value types through a cloud record database.
//
// The model protocol, records and the record coders live in `CloudCodable`;
// the CloudDatabase protocol, its values and the wire form of requests and
// answers in `CloudProtocol`. This module re-exports both: an app imports
// Cumulus (and Foundation for types such as `UUID` and `Date`).

@_exported import CloudCodable
@_exported import CloudProtocol
