/// Compares secrets (MACs, tokens) without an early exit, so the time taken says nothing about where they differ.
public func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
    return difference == 0
}

/// Random bytes from the system's cryptographically secure generator (`getrandom` on Linux), as base64url: for
/// anything a client must not be able to guess (POST tokens, participant ids).
public func secureRandomToken(bytes count: Int = 24) -> String {
    var generator = SystemRandomNumberGenerator()
    return Base64URL.encode((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
}
