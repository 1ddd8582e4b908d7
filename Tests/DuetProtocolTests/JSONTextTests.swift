import DuetProtocol
import Foundation
import Testing

/// The hand-written JSON reader and writer agree with Foundation's on what the protocol sends.
@Suite struct JSONTextTests {
    func foundation(_ text: String) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    @Test(arguments: [
        #"{"v":1,"type":"offer","payload":{"sdp":"v=0\r\na=x\r\n","n":[1,-2,3.5,1e3,true,false,null,{}],"s":"\u00e9\ud83d\ude00 \"q\" \\ \/"}}"#,
        #"  [ 0 , -0.5 , 12345678901234 , "" , [ [ ] ] ]  "#,
        #"{"a":{"b":{"c":"é漢字😀"}}}"#,
        #"9223372036854775807"#,
        #"1.0"#,
    ])
    func readsWhatFoundationReads(_ text: String) throws {
        #expect(try JSONText.parse(Array(text.utf8)) == foundation(text))
    }

    @Test(arguments: [
        "", "{", "}", "[1,]", "{\"a\":}", "{\"a\" 1}", "{a:1}", "'x'", "tru", "nul", "01", "1.", "-", "1e", "\"\\x\"",
        "\"\\ud83d\"", "\"\\udc00\"", "\"tab\there\"", "[1] 2", "NaN", "{\"a\":1,}",
    ])
    func refusesWhatIsNotJSON(_ text: String) {
        #expect(throws: JSONText.SyntaxError.self) { try JSONText.parse(Array(text.utf8)) }
    }

    @Test func refusesInvalidUTF8AndExcessiveDepth() {
        #expect(throws: JSONText.SyntaxError.self) { try JSONText.parse([0x22, 0xFF, 0xFE, 0x22]) }
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: JSONText.SyntaxError.self) { try JSONText.parse(Array(deep.utf8)) }
    }

    @Test func writesWhatFoundationReadsBack() throws {
        let value: JSONValue = ["sdp": "line\r\nnext \"quoted\" \\ / \u{01} é😀", "n": [1, -2, 3.25, true, nil], "nested": ["k": [:]]]
        let written = String(decoding: JSONText.write(value), as: UTF8.self)
        #expect(try foundation(written) == value)
        #expect(try JSONText.parse(JSONText.write(value)) == value)
        #expect(written.hasPrefix(#"{"n":[1,-2,3.25,true,null],"nested":{"k":{}},"sdp":"#), "keys sorted, as JSONCoding writes them")
        #expect(!written.contains(#"\/"#), "slashes are not escaped")
    }

    @Test func envelopeIsWrittenAsItsFieldsWouldBe() throws {
        var full = Envelope(.ice, rid: "r\"1", sid: "s", cid: "c", to: "t", ts: 12, epoch: 3, payload: ["candidate": ["candidate": "a\nb"]])
        full.v = 1
        let bare = Envelope(.ping)
        for envelope in [full, bare] {
            var fields: [String: JSONValue] = ["v": .int(Int64(envelope.v)), "type": .string(envelope.type), "payload": envelope.payload]
            if let rid = envelope.rid { fields["rid"] = .string(rid) }
            if let sid = envelope.sid { fields["sid"] = .string(sid) }
            if let cid = envelope.cid { fields["cid"] = .string(cid) }
            if let to = envelope.to { fields["to"] = .string(to) }
            if let ts = envelope.ts { fields["ts"] = .int(ts) }
            if let epoch = envelope.epoch { fields["epoch"] = .int(epoch) }
            #expect(envelope.encodedBytes() == JSONText.write(.object(fields)), "same bytes as the generic writer: keys sorted")
            #expect(try Envelope.decode(envelope.encodedBytes()) == envelope)
        }
    }
}
