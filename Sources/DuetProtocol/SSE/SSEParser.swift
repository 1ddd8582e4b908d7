/// Incremental `text/event-stream` parser: bytes in, whole events out. Only what the Duet server
/// sends is needed — `data:` lines and comments — but multi-line data and CRLF are handled too.
public struct SSEParser: Sendable {
    public enum Item: Sendable, Equatable {
        case comment(String)
        case data(String)
    }

    private var line: [UInt8] = []
    private var dataLines: [String] = []
    private var lastWasCR = false

    public init() {}

    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Item] {
        var items: [Item] = []
        for byte in bytes {
            if byte == 0x0a, lastWasCR {
                lastWasCR = false
                continue
            }
            lastWasCR = byte == 0x0d
            if byte == 0x0a || byte == 0x0d {
                finishLine(into: &items)
            } else {
                line.append(byte)
            }
        }
        return items
    }

    private mutating func finishLine(into items: inout [Item]) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            if !dataLines.isEmpty {
                items.append(.data(dataLines.joined(separator: "\n")))
                dataLines.removeAll()
            }
            return
        }
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix(":") {
            items.append(.comment(String(text.dropFirst()).trimmingLeadingSpace()))
        } else if text.hasPrefix("data:") {
            dataLines.append(String(text.dropFirst(5)).trimmingLeadingSpace())
        }
        // event:, id:, retry: are not used by Duet.
    }
}

extension String {
    fileprivate func trimmingLeadingSpace() -> String { hasPrefix(" ") ? String(dropFirst()) : self }
}
