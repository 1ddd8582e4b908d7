import Foundation

/// Which tier of the suite this run is (scripts/test.sh sets `DUET_TEST_TIER`; docs/testing.md): the default tier
/// proves the product within CI's budget; the long tier runs the long forms of what the default tier runs short (the
/// 10,000-seed sweeps). A plain `swift test` is the default tier.
public enum TestTier: String, Sendable {
    case quick
    case `default`
    case long

    public static var current: TestTier {
        ProcessInfo.processInfo.environment["DUET_TEST_TIER"].flatMap(TestTier.init(rawValue:)) ?? .default
    }

    /// `short` in the quick and default tiers, `long` in the long tier.
    public static func pick<T>(_ short: T, long: T) -> T { current == .long ? long : short }
}
