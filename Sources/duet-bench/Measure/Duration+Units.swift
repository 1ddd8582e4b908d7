/// Durations as the reports need them.
extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    var nanoseconds: UInt64 { UInt64(max(0, seconds * 1e9)) }
}
