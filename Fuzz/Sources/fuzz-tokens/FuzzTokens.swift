import DuetRooms

/// libFuzzer's entry point: `TokenFuzzChecks.tokens` (which runs `FuzzChecks.identifiers` first) on each input; a
/// failure it reports is a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let failure = TokenFuzzChecks.tokens(bytes) { fatalError(failure) }
    return 0
}
