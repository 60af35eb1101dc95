import CloudCodable

/// A model the benchmarks measure: it can make deterministic samples of
/// itself and give a cheap checksum that keeps the optimiser from discarding
/// a decoded value.
public protocol BenchmarkModel: CloudCodable, Equatable {
    /// The name the benchmarks print for this model, for example `"Landmark"`.
    static var displayName: String { get }

    /// A deterministic sample; different indices give different values.
    static func sample(_ index: Int) -> Self

    /// A value derived from the model that costs next to nothing to compute
    /// (a count, an integer property), folded into each batch's result.
    var checksum: Int { get }
}
