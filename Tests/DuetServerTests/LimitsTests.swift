import DuetLock
import DuetProtocol
import DuetRooms
import Foundation
import Hummingbird
import Logging
import NIOCore
import Testing

@testable import DuetServer

/// The pure parts of the server's limits: who the client is behind a proxy, buckets in bounded memory, connection
/// caps, the flood window, the /metrics gate.
@Suite struct LimitsTests {
    let proxies = ClientAddressResolver(trusted: [CIDRRange("10.0.0.0/8")!, CIDRRange("fd00::/8")!])

    @Test func forwardedHeadersCountOnlyFromATrustedPeer() {
        // Untrusted peer: its headers are ignored.
        #expect(proxies.clientKey(peer: "198.51.100.1", forwardedFor: ["203.0.113.9"], forwarded: []) == "198.51.100.1")
        // Trusted peer: the rightmost untrusted address.
        #expect(proxies.clientKey(peer: "10.0.0.2", forwardedFor: ["203.0.113.9"], forwarded: []) == "203.0.113.9")
        #expect(proxies.clientKey(peer: "10.0.0.2", forwardedFor: ["1.2.3.4, 203.0.113.9, 10.0.0.7"], forwarded: []) == "203.0.113.9")
        #expect(proxies.clientKey(peer: "10.0.0.2", forwardedFor: ["1.2.3.4", "203.0.113.9"], forwarded: []) == "203.0.113.9")
        // Garbage where the client should be: the proxy's own address, never the garbage.
        #expect(proxies.clientKey(peer: "10.0.0.2", forwardedFor: ["203.0.113.9, not-an-ip"], forwarded: []) == "10.0.0.2")
        // Only the header the proxy writes is read: with X-Forwarded-For, a client's own Forwarded picks nothing…
        #expect(proxies.clientKey(peer: "10.0.0.2", forwardedFor: [], forwarded: ["for=192.0.2.60"]) == "10.0.0.2")
        #expect(proxies.clientKey(peer: "10.0.0.2", forwardedFor: ["203.0.113.9"], forwarded: ["for=192.0.2.60"]) == "203.0.113.9")
        // …and with Forwarded (RFC 7239; quoted IPv6 with port), a client's own X-Forwarded-For picks nothing.
        let rfc = ClientAddressResolver(trusted: proxies.trusted, header: .forwarded)
        #expect(
            rfc.clientKey(peer: "10.0.0.2", forwardedFor: [], forwarded: [#"for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711""#])
                == "2001:db8:cafe:0::/64")
        #expect(rfc.clientKey(peer: "10.0.0.2", forwardedFor: ["203.0.113.9"], forwarded: []) == "10.0.0.2")
        // IPv4-mapped IPv6 peers are IPv4; IPv6 clients count per /64.
        #expect(proxies.clientKey(peer: "::ffff:10.0.0.2", forwardedFor: ["203.0.113.9"], forwarded: []) == "203.0.113.9")
        #expect(proxies.clientKey(peer: "2001:db8:1:2:3:4:5:6", forwardedFor: [], forwarded: []) == "2001:db8:1:2::/64")
        #expect(proxies.clientKey(peer: "2001:db8:1:2::9", forwardedFor: [], forwarded: []) == "2001:db8:1:2::/64")
    }

    @Test func cidrRanges() throws {
        func within(_ range: String, _ address: String) throws -> Bool {
            let range = try #require(CIDRRange(range))
            let address = try #require(IPAddress(address))
            return range.contains(address)
        }
        #expect(try within("10.0.0.0/8", "10.255.1.2"))
        #expect(try !within("10.0.0.0/8", "11.0.0.1"))
        #expect(try within("192.168.1.0/25", "192.168.1.127"))
        #expect(try !within("192.168.1.0/25", "192.168.1.128"))
        #expect(try within("fd00::/8", "fdab::1"))
        #expect(try !within("fd00::/8", "10.0.0.1"))
        #expect(CIDRRange("127.0.0.1")?.prefixLength == 32)
        for bad in ["", "10.0.0.0/33", "fd00::/129", "nope", "10.0.0.0/-1", "10.0.0/8", "1.2.3.4/8/9"] {
            #expect(CIDRRange(bad) == nil, "\(bad)")
        }
        #expect(throws: ConfigurationError.self) { try ClientAddressResolver(parsing: ["10.0.0.0/8", "bogus"]) }
    }

    /// 100,000 sprayed keys do not reset the bucket of an abuser who keeps going, and memory stays at two generations.
    @Test func aSprayOfNewAddressesForgetsOnlyIdleBuckets() {
        var buckets = BoundedBuckets(rule: .init(capacity: 3, refillPerSecond: 0.0001), generationSize: 1_000)
        let firstFour = (0..<4).map { _ in buckets.take("abuser", nowMs: 0) }
        #expect(firstFour == [true, true, true, false])
        for index in 0..<100_000 {
            _ = buckets.take("spray-\(index)", nowMs: 1)
            if index.isMultiple(of: 500) {
                let allowed = buckets.take("abuser", nowMs: 1)
                #expect(!allowed, "the abuser's bucket was reset at \(index)")
            }
            #expect(buckets.count <= 2_000)
        }
        // An address idle for a whole generation is forgotten (and starts afresh), which is the price of the bound.
        var idle = BoundedBuckets(rule: .init(capacity: 1, refillPerSecond: 0.0001), generationSize: 10)
        let before = idle.take("quiet", nowMs: 0)
        for index in 0..<25 { _ = idle.take("other-\(index)", nowMs: 0) }
        let after = idle.take("quiet", nowMs: 0)
        #expect(before && after)
    }

    @Test func connectionCapsPerAddressAndInTotal() {
        let limiter = ConnectionLimiter(limits: .init(perAddress: 2, total: 3))
        let first = try? limiter.admit("a").get()
        let second = try? limiter.admit("a").get()
        #expect(first != nil && second != nil)
        #expect(throws: ConnectionLimiter.Refusal.perAddress) { try limiter.admit("a").get() }
        let third = try? limiter.admit("b").get()
        #expect(third != nil)
        #expect(throws: ConnectionLimiter.Refusal.total) { try limiter.admit("c").get() }
        limiter.release(first!)
        #expect((try? limiter.admit("c").get()) != nil)
        #expect(limiter.openConnections == 3)
    }

    /// A released slot is returned once, also when the upgrade never completes (the slot is simply dropped).
    @Test func anAdmissionSlotReturnsItsTicketExactlyOnce() {
        let limiter = ConnectionLimiter(limits: .init(perAddress: 1, total: 10))
        do {
            let slot = AdmissionSlot()
            slot.hold(try! limiter.admit("a").get(), of: limiter)
            #expect(limiter.openConnections == 1)
        }
        #expect(limiter.openConnections == 0, "a dropped slot leaked its ticket")
        let slot = AdmissionSlot()
        slot.hold(try! limiter.admit("a").get(), of: limiter)
        slot.release()
        slot.release()
        #expect(limiter.openConnections == 0)
    }

    /// Flooding is a rate: 99 drops now and then over a long life do not close a connection; 100 within 10 s do.
    @Test func floodDetectionMeasuresARateNotALifetime() {
        let clock = Mutex<Int64>(0)
        let hub = SessionHub(
            core: SignalingCore(settings: .init(), authorities: Self.authorities(), seed: 1), metrics: ServerMetrics(),
            logger: Logger(label: "test"), messageRate: (capacity: 1, perSecond: 0.0001), now: { clock.withLock { $0 } })
        let sent = Mutex<[Outbound]>([])
        let id = hub.open(
            .ws,
            sink: OutboundSink(
                yield: { item in
                    sent.withLock { $0.append(item) }
                    return true
                }, finish: {}, abort: {}))
        let ping = Array(#"{"v":1,"type":"ping"}"#.utf8)
        hub.receive(ping, from: id)  // the one token
        func closed() -> Bool { sent.withLock { $0.contains { if case .close = $0 { true } else { false } } } }
        // 50 drops every 11 s, for 10 minutes: never 100 within a window.
        for minute in 0..<55 {
            clock.withLock { $0 = Int64(minute) * 11_000 }
            for _ in 0..<50 { hub.receive(ping, from: id) }
        }
        #expect(!closed(), "a long-lived connection was closed for drops spread over its life")
        clock.withLock { $0 += 11_000 }
        for _ in 0..<100 { hub.receive(ping, from: id) }
        #expect(closed())
    }

    @Test func metricsAreForLoopbackWithoutAToken() throws {
        let routes = OperationsRoutes(hub: Self.hub(), metrics: ServerMetrics(), token: nil, addresses: ClientAddressResolver(trusted: []))
        let request = Request(
            head: .init(method: .get, scheme: "http", authority: "x", path: "/metrics"), body: .init(buffer: ByteBuffer()))
        // Behind a proxy on the same host every request comes from 127.0.0.1: forwarded requests are not local…
        let forwarded = Request(
            head: .init(
                method: .get, scheme: "http", authority: "x", path: "/metrics", headerFields: [.init("X-Forwarded-For")!: "203.0.113.9"]),
            body: .init(buffer: ByteBuffer()))
        #expect(!routes.mayRead(forwarded, peer: try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        // …nor is anything from a trusted proxy.
        let proxied = OperationsRoutes(
            hub: Self.hub(), metrics: ServerMetrics(), token: nil, addresses: ClientAddressResolver(trusted: [CIDRRange("127.0.0.1")!]))
        #expect(!proxied.mayRead(request, peer: try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        #expect(routes.mayRead(request, peer: try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        #expect(routes.mayRead(request, peer: try SocketAddress(ipAddress: "::1", port: 1)))
        #expect(!routes.mayRead(request, peer: try SocketAddress(ipAddress: "10.1.2.3", port: 1)))
        #expect(!routes.mayRead(request, peer: try SocketAddress(ipAddress: "2001:db8::1", port: 1)))
        #expect(!routes.mayRead(request, peer: nil))
        // With a token, loopback is not enough.
        let guarded = OperationsRoutes(
            hub: Self.hub(), metrics: ServerMetrics(), token: "a-long-enough-metrics-token", addresses: ClientAddressResolver(trusted: []))
        #expect(!guarded.mayRead(request, peer: try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
    }

    static func authorities() -> SignalingCore.Authorities {
        let secrets = ServerSecrets.generate()
        return SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: secrets.key(secrets.roomIdSecret)),
            reconnectTokens: ReconnectTokenAuthority(key: secrets.key(secrets.reconnectSecret), ttlMs: 60_000),
            turnTokens: TurnTokenAuthority(key: secrets.key(secrets.turnTokenSecret), ttlMs: 60_000))
    }

    static func hub() -> SessionHub {
        SessionHub(
            core: SignalingCore(settings: .init(), authorities: authorities(), seed: 1), metrics: ServerMetrics(),
            logger: Logger(label: "test"), messageRate: nil)
    }
}
