/// The version of the Cumulus server: `cumulus --version` prints it.
public enum CumulusVersion {
    /// The version of this build, `MAJOR.MINOR.PATCH`.
    public static let current = "0.1.0"
}
