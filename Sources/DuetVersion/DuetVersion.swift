/// The version of Duet's products (CHANGELOG.md) and the commit they were built from (stamped by the StampCommit
/// plugin at build time).
public enum DuetVersion {
    public static let version = "0.1.0"
    public static var commit: String { buildCommit }
    /// What `--version` prints: `0.1.0 (commit 1a2b3c4d5e)`.
    public static var description: String { "\(version) (commit \(commit))" }
}
