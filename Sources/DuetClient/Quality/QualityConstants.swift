/// The numbers call quality is judged by (docs/call-quality.md). The browser's copy is
/// `js/quality/quality-constants.js`; tests on both sides compare it with `table`, row by row.
public enum QualityConstants {
    /// A MOS at or above this is `good` (R ≈ 79: "users satisfied" in ITU-T G.107's categories).
    public static let QUALITY_GOOD_MOS_MIN = 4.0
    /// A MOS at or above this (and below good) is `fair`; below it, `poor` (R = 60: below it "many users dissatisfied").
    public static let QUALITY_FAIR_MOS_MIN = 3.1
    /// How often a reading is taken while in a call (`DuetCall.Configuration.statsInterval`'s default).
    public static let QUALITY_SAMPLE_INTERVAL_MS: Int64 = 1_000

    /// Every constant by name, for parity checks with other clients.
    public static let table: [(name: String, value: Double)] = [
        ("QUALITY_GOOD_MOS_MIN", QUALITY_GOOD_MOS_MIN),
        ("QUALITY_FAIR_MOS_MIN", QUALITY_FAIR_MOS_MIN),
        ("QUALITY_SAMPLE_INTERVAL_MS", Double(QUALITY_SAMPLE_INTERVAL_MS)),
    ]
}
