@testable import DuetServer
import Synchronization
import Testing

/// The WebSocket writer that exists as a task only while frames wait: order across bursts, nothing after the
/// socket refused a frame or after a close, everything queued before `finish` still goes out, and replies to the
/// connection's own message written by its own task.
@Suite struct WebSocketWriterTests {
    /// Records what reached the "socket"; refuses from the `failAt`-th frame on.
    final class Socket: Sendable {
        let written = Mutex<[Outbound]>([])
        let failAt: Int?
        init(failAt: Int? = nil) { self.failAt = failAt }

        func write(_ item: Outbound) async -> Bool {
            await Task.yield()  // a real write suspends; let the hub enqueue meanwhile
            return written.withLock { written in
                if let failAt, written.count >= failAt { return false }
                written.append(item)
                if case .close = item { return false }
                return true
            }
        }
    }

    func settle(_ socket: Socket, count: Int) async {
        for _ in 0..<2_000 where socket.written.withLock({ $0.count }) < count { try? await Task.sleep(for: .milliseconds(1)) }
        try? await Task.sleep(for: .milliseconds(20))  // and nothing more arrives
    }

    @Test func framesGoOutInOrderAcrossBursts() async {
        let socket = Socket()
        let writer = WebSocketWriter(budget: OutboundBudget(maxMessages: .max, maxBytes: .max), write: socket.write)
        for burst in 0..<20 {
            for index in 0..<50 { writer.enqueue(.text("\(burst * 50 + index)")) }
            if burst.isMultiple(of: 3) { try? await Task.sleep(for: .milliseconds(1)) }  // let the writer go idle between some bursts
        }
        await settle(socket, count: 1_000)
        #expect(socket.written.withLock { $0 } == (0..<1_000).map { .text("\($0)") })
    }

    @Test func nothingIsWrittenAfterTheSocketRefusedAFrame() async {
        let socket = Socket(failAt: 3)
        let writer = WebSocketWriter(budget: OutboundBudget(maxMessages: .max, maxBytes: .max), write: socket.write)
        for index in 0..<10 { writer.enqueue(.text("\(index)")) }
        await settle(socket, count: 3)
        writer.enqueue(.text("late"))
        await settle(socket, count: 3)
        #expect(socket.written.withLock { $0 } == [.text("0"), .text("1"), .text("2")])
    }

    @Test func aCloseIsTheLastFrame() async {
        let socket = Socket()
        let writer = WebSocketWriter(budget: OutboundBudget(maxMessages: .max, maxBytes: .max), write: socket.write)
        writer.enqueue(.text("error"))
        writer.enqueue(.close(.messageTooBig, reason: "message too large"))
        writer.enqueue(.text("after close"))
        await settle(socket, count: 2)
        #expect(socket.written.withLock { $0 } == [.text("error"), .close(.messageTooBig, reason: "message too large")])
    }

    @Test func whatWasQueuedBeforeFinishStillGoesOutButNothingAfter() async {
        let socket = Socket()
        let writer = WebSocketWriter(budget: OutboundBudget(maxMessages: .max, maxBytes: .max), write: socket.write)
        writer.enqueue(.text("a"))
        writer.enqueue(.close(.serviceRestart, reason: "server shutting down"))
        writer.finish()
        writer.enqueue(.text("b"))
        await settle(socket, count: 2)
        #expect(socket.written.withLock { $0 } == [.text("a"), .close(.serviceRestart, reason: "server shutting down")])
    }

    @Test func repliesToTheConnectionsOwnMessageAreWrittenBeforeItReadsTheNext() async {
        let socket = Socket()
        let writer = WebSocketWriter(budget: OutboundBudget(maxMessages: .max, maxBytes: .max), write: socket.write)
        await writer.handlingOwnMessage {
            writer.enqueue(.text("joined"))
            writer.enqueue(.text("peer relay that arrived meanwhile"))
            #expect(socket.written.withLock { $0 }.isEmpty, "nothing is written while the message is being handled")
        }
        #expect(socket.written.withLock { $0 } == [.text("joined"), .text("peer relay that arrived meanwhile")],
                "written by the connection's own task before handlingOwnMessage returns")
        writer.enqueue(.text("later, from a peer"))
        await settle(socket, count: 3)
        #expect(socket.written.withLock { $0 }.last == .text("later, from a peer"), "outside a message a drain task writes")
    }

    @Test func closingWritesEverythingQueuedFirst() async {
        let socket = Socket()
        let writer = WebSocketWriter(budget: OutboundBudget(maxMessages: .max, maxBytes: .max), write: socket.write)
        for index in 0..<200 { writer.enqueue(.text("\(index)")) }  // a drain task is on its way through these
        writer.finish()
        await writer.flushBeforeClose()
        #expect(socket.written.withLock { $0 } == (0..<200).map { .text("\($0)") }, "all written before the close is sent")
    }

    /// A peer that sends another frame every time one is written, until told to stop.
    final class BusyPeer: Sendable {
        let stopped = Mutex(false)
        let writer = Mutex<WebSocketWriter?>(nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func aPeerThatNeverStopsDoesNotKeepTheConnectionFromReading() async {
        let peer = BusyPeer()
        let socket = Socket()
        let writer = WebSocketWriter { item in
            let written = await socket.write(item)
            if !peer.stopped.withLock({ $0 }) { peer.writer.withLock { $0 }?.enqueue(.text("more")) }
            return written
        }
        peer.writer.withLock { $0 = writer }
        await writer.handlingOwnMessage { writer.enqueue(.text("pong")) }
        peer.stopped.withLock { $0 = true }  // reached only if the connection's task went back to reading
        #expect(socket.written.withLock { $0 }.first == .text("pong"))
        writer.finish()
        await writer.flushBeforeClose()
    }

    /// A client that does not read: the socket never takes a frame. The writer's queue stops at `OutboundBound`, in
    /// messages or in bytes, whichever comes first, and says so (the hub then cuts the connection off).
    @Test func aQueueThatIsNotReadStopsAtItsBound() async {
        let stuck = Gate()
        let byCount = WebSocketWriter(budget: OutboundBudget(maxMessages: 10, maxBytes: 1 << 20)) { _ in await stuck.wait(); return true }
        let admitted = (0..<15).map { byCount.enqueue(.text("\($0)")) }
        #expect(admitted == Array(repeating: true, count: 10) + Array(repeating: false, count: 5))
        #expect(byCount.budget.queued.messages == 10)

        let bySize = WebSocketWriter(budget: OutboundBudget(maxMessages: 1_000, maxBytes: 100_000)) { _ in await stuck.wait(); return true }
        let big = String(repeating: "x", count: 30_000)
        #expect((0..<5).map { _ in bySize.enqueue(.text(big)) } == [true, true, true, false, false])
        // A close is never refused: the hub must always be able to say goodbye.
        #expect(bySize.enqueue(.close(.notReading, reason: "not_reading")))

        // Once the socket takes frames again, the budget is given back.
        let flowing = Socket()
        let recovering = WebSocketWriter(budget: OutboundBudget(maxMessages: 4, maxBytes: 1 << 20), write: flowing.write)
        for index in 0..<4 { #expect(recovering.enqueue(.text("\(index)"))) }
        await settle(flowing, count: 4)
        #expect(recovering.budget.queued.messages == 0)
        #expect(recovering.enqueue(.text("4")))
        await stuck.open()
    }

    actor Gate {
        private var waiters: [CheckedContinuation<Void, Never>] = []
        private var isOpen = false
        func wait() async {
            if isOpen { return }
            await withCheckedContinuation { waiters.append($0) }
        }
        func open() {
            isOpen = true
            for waiter in waiters { waiter.resume() }
            waiters = []
        }
    }
}
