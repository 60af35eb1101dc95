/// A container's environment: each has its own data, users and schema.
public enum CloudEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    /// Where an app is developed: the schema grows with the first write of each field.
    case development
    /// Where an app's users are.
    case production
}
