/// JSON text ⇄ `JSONValue` without Codable: every message the server receives is parsed here and every
/// message it sends is written here, and Foundation's coders cost most of a relay's CPU (docs/benchmarks.md).
/// Same acceptance as `JSONDecoder` for what the protocol uses: RFC 8259, UTF-8, integers that fit `Int64`
/// as `.int`, depth ≤ 512; keys are written sorted and slashes unescaped, as `JSONCoding.encoder` does.
public enum JSONText {
    public struct SyntaxError: Error, Equatable {
        public let offset: Int
    }

    public static func parse(_ bytes: some Collection<UInt8>) throws(SyntaxError) -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            var parser = Parser(bytes: buffer)
            parser.skipWhitespace()
            let value = try parser.value(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw SyntaxError(offset: parser.index) }
            return value
        }
    }

    public static func write(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    // MARK: - Writing

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out += "null".utf8
        case .bool(let flag): out += (flag ? "true" : "false").utf8
        case .int(let number): out += String(number).utf8
        case .double(let number):
            // JSON has no NaN or infinity; JSONValue only gets them from Swift code, never from the wire.
            out +=
                (number.isFinite ? (number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)") : "null").utf8
        case .string(let text): writeString(text, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (index, field) in fields.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                writeString(field.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(field.value, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, SDP lines, candidates) need no escaping: copy them whole.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out += text.utf8
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += "\\\"".utf8
            case UInt8(ascii: "\\"): out += "\\\\".utf8
            case 0x0A: out += "\\n".utf8
            case 0x0D: out += "\\r".utf8
            case 0x09: out += "\\t".utf8
            case 0x08: out += "\\b".utf8
            case 0x0C: out += "\\f".utf8
            case 0..<0x20:
                out += [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                ]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: - Parsing

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        static let maxDepth = 512

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        func fail() -> SyntaxError { SyntaxError(offset: index) }

        mutating func value(depth: Int) throws(SyntaxError) -> JSONValue {
            guard index < bytes.count, depth <= Self.maxDepth else { throw fail() }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            default: return try number()
            }
        }

        mutating func literal(_ word: StaticString) throws(SyntaxError) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail() }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw fail() }
            index += count
        }

        mutating func object(depth: Int) throws(SyntaxError) -> JSONValue {
            index += 1
            // Envelopes and payloads have a handful of fields: one allocation instead of growing 1 → 2 → 4 → 8.
            var fields = [String: JSONValue](minimumCapacity: 8)
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(fields)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail() }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail() }
                index += 1
                skipWhitespace()
                fields[key] = try value(depth: depth)
                skipWhitespace()
                guard index < bytes.count else { throw fail() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw fail() }
                index += 1
                return .object(fields)
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> JSONValue {
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw fail() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw fail() }
                index += 1
                return .array(items)
            }
        }

        mutating func string() throws(SyntaxError) -> String {
            index += 1
            let start = index
            // Fast path: no escapes.
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                guard bytes[index] >= 0x20 else { throw fail() }
                index += 1
            }
            guard index < bytes.count else { throw fail() }
            if bytes[index] == UInt8(ascii: "\"") {
                // No escapes (ids, types, SDP, candidates): make the String straight from the bytes. ASCII needs
                // no validation; anything else goes through the validating initializer.
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
                guard let text = String(validating: slice, as: UTF8.self) else { throw fail() }
                return text
            }
            var raw = Array(bytes[start..<index])
            while bytes[index] == UInt8(ascii: "\\") {
                index += 1
                guard index < bytes.count else { throw fail() }
                switch bytes[index] {
                case UInt8(ascii: "\""): raw.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): raw.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): raw.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): raw.append(0x08)
                case UInt8(ascii: "f"): raw.append(0x0C)
                case UInt8(ascii: "n"): raw.append(0x0A)
                case UInt8(ascii: "r"): raw.append(0x0D)
                case UInt8(ascii: "t"): raw.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\\"), bytes[index + 2] == UInt8(ascii: "u") else {
                            throw fail()
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail() }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw fail()
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail() }
                    raw += Array(String(Character(unicode)).utf8)
                default: throw fail()
                }
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
                    guard bytes[index] >= 0x20 else { throw fail() }
                    raw.append(bytes[index])
                    index += 1
                }
                guard index < bytes.count else { throw fail() }
            }
            index += 1  // the closing quote
            guard let text = String(validating: raw, as: UTF8.self) else { throw fail() }
            return text
        }

        /// Four hex digits after `\u`; leaves `index` on the last one.
        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 < bytes.count else { throw fail() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                index += 1
                let byte = bytes[index]
                let digit: UInt32 =
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
                    case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
                    default: throw fail()
                    }
                value = value << 4 | digit
            }
            return value
        }

        mutating func number() throws(SyntaxError) -> JSONValue {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw fail() }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            var integral = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw fail() }
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw fail() }
                while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if integral, let exact = Int64(text) { return .int(exact) }
            guard let double = Double(text), double.isFinite else { throw fail() }
            // As JSONDecoder: a number that is an integer in Int64's range is an integer.
            if double == double.rounded(), abs(double) < 9.2e18 { return .int(Int64(double)) }
            return .double(double)
        }
    }
}
