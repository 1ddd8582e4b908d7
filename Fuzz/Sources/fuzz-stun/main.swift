import DuetProtocol

/// libFuzzer's entry point: `FuzzChecks.stun` on each input (a UDP datagram to the STUN server); a failure it reports
/// is a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let failure = FuzzChecks.stun(bytes) { fatalError(failure) }
    return 0
}
