import DuetProtocol

/// libFuzzer's entry point: `FuzzChecks.envelope` on each input; a failure it reports is a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let failure = FuzzChecks.envelope(bytes) { fatalError(failure) }
    return 0
}
