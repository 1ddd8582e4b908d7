#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a lock, with `Synchronization.Mutex`'s API (`Mutex(value)`, `withLock { … }`), on a pthread mutex.
///
/// Why not `Synchronization.Mutex`: on Linux it is a futex that ThreadSanitizer cannot see, so every value it
/// guards was reported as a race (scripts/sanitize.sh's first run: `SessionHub`'s shards, each access inside
/// `withLock`; Tests/sanitize/README.md has the twenty lines that show it with nothing of Duet's). ThreadSanitizer
/// intercepts `pthread_mutex_lock`, so with this lock its reports are about Duet's code. An uncontended pthread mutex
/// costs about what the futex does; the value moves into a class (one allocation per lock, made once).
public final class Mutex<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only between `pthread_mutex_lock` and `pthread_mutex_unlock`
    // of `handle` (in `withLock`, the only access), and the closure gets it `inout sending`, so it can neither keep it
    // nor return it without giving it up — the contract `Synchronization.Mutex` is Sendable under.
    private let handle: UnsafeMutablePointer<pthread_mutex_t>
    // Unchecked: the lock is what makes access exclusive; the runtime's dynamic check on a class property would cost
    // every `withLock` (the relay path) for nothing.
    @exclusivity(unchecked) private var value: Value

    public init(_ initialValue: consuming sending Value) {
        handle = .allocate(capacity: 1)
        handle.initialize(to: pthread_mutex_t())
        // Error-checking: a thread that takes the lock it holds stops with a message, as `Synchronization.Mutex` does,
        // instead of hanging (a default pthread mutex deadlocks silently).
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let status = pthread_mutex_init(handle, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        value = initialValue
    }

    deinit {
        pthread_mutex_destroy(handle)
        handle.deinitialize(count: 1)
        handle.deallocate()
    }

    /// `body` with the value, under the lock.
    public func withLock<Result: ~Copyable, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result
    {
        let locked = pthread_mutex_lock(handle)
        precondition(locked == 0, "Mutex.withLock: the lock is already held by this thread (or pthread_mutex_lock failed: \(locked))")
        defer { pthread_mutex_unlock(handle) }
        return try body(&value)
    }
}
