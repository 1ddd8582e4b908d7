/// One virtual clock and one queue of events: the whole simulated world advances one event at a time,
/// in (time, insertion) order, so a seed always replays the same history.
final class Scheduler {
    private struct Entry {
        let time: Int64
        let sequence: UInt64
        let action: () -> Void
    }

    private(set) var now: Int64 = 0
    private var heap: [Entry] = []
    private var sequence: UInt64 = 0
    private(set) var eventsRun = 0

    func at(_ time: Int64, _ action: @escaping () -> Void) {
        sequence += 1
        heap.append(Entry(time: max(time, now), sequence: sequence, action: action))
        siftUp(heap.count - 1)
    }

    func after(_ delay: Int64, _ action: @escaping () -> Void) { at(now + max(0, delay), action) }

    var isEmpty: Bool { heap.isEmpty }
    var nextTime: Int64? { heap.first?.time }

    /// Runs events up to and including `time`; `afterEach` sees the world after every event and may stop the run.
    func run(until time: Int64, afterEach: () -> Bool) {
        while let first = heap.first, first.time <= time {
            let entry = pop()
            now = entry.time
            entry.action()
            eventsRun += 1
            if !afterEach() { return }
        }
        now = max(now, time)
    }

    // MARK: - Binary heap

    private func less(_ a: Entry, _ b: Entry) -> Bool { a.time != b.time ? a.time < b.time : a.sequence < b.sequence }

    private func pop() -> Entry {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
        return top
    }

    private func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, less(heap[left], heap[smallest]) { smallest = left }
            if right < heap.count, less(heap[right], heap[smallest]) { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
