import DuetClient
import Testing

/// `CallLink`: what `duet call` and DuetClient take — a link with or without its `#k=` key, or a room id.
@Suite struct CallLinkTests {
    static let room = "AbCdEfGhIjKlMnOpQrStUvWxYz0"
    static let key = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA"

    @Test func aKeyedLinkGivesServerRoomAndKey() throws {
        let link = try CallLink("https://duet.example/call/\(Self.room)#k=\(Self.key)", server: nil)
        #expect(link.server == "https://duet.example/")
        #expect(link.roomId == Self.room)
        #expect(link.key?.bytes == Array(1...32))
        #expect(link.text == "https://duet.example/call/\(Self.room)#k=\(Self.key)", "shared again with its key")
    }

    @Test func theKeyIsFoundAmongOtherFragmentPartsAndAfterAQuery() throws {
        let link = try CallLink("http://127.0.0.1:8080/call/\(Self.room)?transports=sse#x=1&k=\(Self.key)&y", server: nil)
        #expect(link.key?.base64url == Self.key)
        #expect(link.roomId == Self.room)
    }

    @Test func linksWithoutAKeyAndRoomIdsAreUnkeyed() throws {
        #expect(try CallLink("http://127.0.0.1:8080/call/\(Self.room)", server: nil).key == nil)
        #expect(try CallLink("http://127.0.0.1:8080/call/\(Self.room)#other=1", server: nil).key == nil)
        let typed = try CallLink(Self.room, server: "http://10.0.0.1:9000")
        #expect(typed.key == nil && typed.server == "http://10.0.0.1:9000/" && typed.text == "http://10.0.0.1:9000/call/\(Self.room)")
    }

    @Test(arguments: [String(key.dropLast()), key + "A", String(key.dropLast()) + "B", "", String(key.dropLast()) + "="])
    func aDamagedKeyIsRefusedNotJoinedUnverified(bad: String) {
        #expect(throws: CallLink.Problem.damagedKey) { try CallLink("https://duet.example/call/\(Self.room)#k=\(bad)", server: nil) }
    }

    @Test func aRefusedLinkIsNotEchoedWithItsKey() {
        do {
            _ = try CallLink("https://duet.example/nope/#k=\(Self.key)", server: nil)
            Issue.record("accepted a link without /call/")
        } catch {
            #expect(!error.description.contains(Self.key))
        }
    }
}
