import Foundation

/// `{"v":1,"type":"…","rid":"…","sid":"…","cid":"…","to":"…","ts":…,"payload":{…}}`
///
/// `epoch` is an envelope field the server adds to relayed messages so that a client can drop
/// negotiation from an older membership epoch.
public struct Envelope: Sendable, Equatable {
    public static let version = 1

    public var v: Int
    public var type: String
    public var rid: String?
    public var sid: String?
    public var cid: String?
    public var to: String?
    public var ts: Int64?
    public var epoch: Int64?
    public var payload: JSONValue

    public init(
        type: String, rid: String? = nil, sid: String? = nil, cid: String? = nil, to: String? = nil,
        ts: Int64? = nil, epoch: Int64? = nil, payload: JSONValue = [:]
    ) {
        self.v = Self.version
        self.type = type
        self.rid = rid
        self.sid = sid
        self.cid = cid
        self.to = to
        self.ts = ts
        self.epoch = epoch
        self.payload = payload
    }

    public init(
        _ type: MessageType, rid: String? = nil, sid: String? = nil, cid: String? = nil, to: String? = nil,
        ts: Int64? = nil, epoch: Int64? = nil, payload: JSONValue = [:]
    ) {
        self.init(type: type.rawValue, rid: rid, sid: sid, cid: cid, to: to, ts: ts, epoch: epoch, payload: payload)
    }

    public var messageType: MessageType? { MessageType(rawValue: type) }
}

extension Envelope {
    /// Parses one wire message, checking every envelope field's type. The thrown error is what the
    /// sender is told (`BAD_REQUEST` or `UNSUPPORTED_VERSION`).
    public static func decode(_ bytes: some DataProtocol) throws(ProtocolError) -> Envelope {
        try decode(Array(bytes))
    }

    /// The same, without generic dispatch across modules: the server decodes every message it receives here.
    public static func decode(_ bytes: [UInt8]) throws(ProtocolError) -> Envelope {
        let json: JSONValue
        do {
            json = try JSONText.parse(bytes)
        } catch {
            throw ProtocolError(.badRequest, "invalid JSON")
        }
        guard case .object(let fields) = json else {
            throw ProtocolError(.badRequest, "a message must be a JSON object")
        }
        guard let rawVersion = fields["v"] else { throw ProtocolError(.badRequest, "missing field v") }
        guard let version = rawVersion.intValue else {
            throw ProtocolError(.badRequest, "field v must be a number, got \(rawVersion.kindName)")
        }
        guard let rawType = fields["type"] else { throw ProtocolError(.badRequest, "missing field type") }
        guard let type = rawType.stringValue, !type.isEmpty else {
            throw ProtocolError(.badRequest, "field type must be a non-empty string")
        }
        guard version == Int64(Self.version) else {
            throw ProtocolError(.unsupportedVersion, "protocol version \(version) is not supported; use v=1")
        }
        var envelope = Envelope(type: type)
        envelope.rid = try optionalString(fields, "rid")
        envelope.sid = try optionalString(fields, "sid")
        envelope.cid = try optionalString(fields, "cid")
        envelope.to = try optionalString(fields, "to")
        envelope.ts = try optionalInt(fields, "ts")
        envelope.epoch = try optionalInt(fields, "epoch")
        switch fields["payload"] {
        case nil, .null?: envelope.payload = [:]
        case .object?: envelope.payload = fields["payload"]!
        case let other?: throw ProtocolError(.badRequest, "field payload must be an object, got \(other.kindName)")
        }
        return envelope
    }

    public func encoded() -> Data { Data(encodedBytes()) }

    public func encodedString() -> String { String(decoding: encodedBytes(), as: UTF8.self) }

    /// The envelope's fields written straight out in sorted key order (what `JSONText` does for any object),
    /// without building a dictionary first: every message the server sends passes here.
    public func encodedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(UInt8(ascii: "{"))
        var first = true
        func key(_ name: StaticString) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out += "\":".utf8
        }
        if let cid {
            key("cid")
            JSONText.writeString(cid, into: &out)
        }
        if let epoch {
            key("epoch")
            out += String(epoch).utf8
        }
        key("payload")
        JSONText.write(payload, into: &out)
        if let rid {
            key("rid")
            JSONText.writeString(rid, into: &out)
        }
        if let sid {
            key("sid")
            JSONText.writeString(sid, into: &out)
        }
        if let to {
            key("to")
            JSONText.writeString(to, into: &out)
        }
        if let ts {
            key("ts")
            out += String(ts).utf8
        }
        key("type")
        JSONText.writeString(type, into: &out)
        key("v")
        out += String(v).utf8
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static func optionalString(_ fields: [String: JSONValue], _ key: String) throws(ProtocolError) -> String? {
        switch fields[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?: throw ProtocolError(.badRequest, "field \(key) must be a string, got \(other.kindName)")
        }
    }

    private static func optionalInt(_ fields: [String: JSONValue], _ key: String) throws(ProtocolError) -> Int64? {
        switch fields[key] {
        case nil, .null?: return nil
        case let value?:
            guard let number = value.intValue else {
                throw ProtocolError(.badRequest, "field \(key) must be an integer, got \(value.kindName)")
            }
            return number
        }
    }
}
