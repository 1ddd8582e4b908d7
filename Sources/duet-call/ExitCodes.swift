/// `duet call`'s exit codes (also in docs/duet-call.md).
enum ExitCodes {
    /// Left: Ctrl-C, SIGTERM, or `--duration` elapsed.
    static let left: Int32 = 0
    /// The media engine could not start (GStreamer plugins missing, pipeline refused).
    static let mediaFailed: Int32 = 1
    /// The call could not be joined: invalid room, room full, room already ended, join timed out.
    static let joinFailed: Int32 = 3
    /// The room ended during the call (the host ended it, or it expired).
    static let roomEnded: Int32 = 4
    /// Another connection took this seat over with its token (close 4001): this peer stepped aside.
    static let replaced: Int32 = 5
    /// A verified call's offer or answer failed its check (here or at the peer): someone may be in the middle, and
    /// the call was ended, not retried.
    static let intercepted: Int32 = 6
    /// `--ring`: the other person declined.
    static let declined: Int32 = 7
    /// `--ring`: nobody answered before the ring's timeout.
    static let noAnswer: Int32 = 8
    /// `--ring`: no device of the other person could be rung (nobody listening, no push subscription).
    static let unreachable: Int32 = 9
    /// `--answer`: no ring came before `--duration` ran out.
    static let noRing: Int32 = 10
    /// Bad arguments (ArgumentParser's usage code).
    static let usage: Int32 = 64
}
