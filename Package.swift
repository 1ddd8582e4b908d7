// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Duet",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "duet", targets: ["duet"]),
        // The headless peer with real media (GStreamer webrtcbin); the only product that needs GStreamer.
        .executable(name: "duet-call", targets: ["duet-call"]),
        .library(name: "DuetProtocol", targets: ["DuetProtocol"]),
        .library(name: "DuetServer", targets: ["DuetServer"]),
        .library(name: "DuetRooms", targets: ["DuetRooms"]),
        .library(name: "DuetTransport", targets: ["DuetTransport"]),
        .library(name: "DuetClient", targets: ["DuetClient"]),
        // Load generator and benchmarks (docs/benchmarks.md).
        .executable(name: "duet-bench", targets: ["duet-bench"]),
        // Thousands of fault schedules, deterministically: `swift run -c release duet-sim --seeds 10000`.
        .executable(name: "duet-sim", targets: ["duet-sim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The durable room-state store: SQLite (bundled) on one node, PostgreSQL shared by a cluster.
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The API reference: `swift package generate-documentation --target DuetClient` (a command plugin: nothing of it
        // is built by `swift build`).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Wire contract: envelope, message payloads, error codes, id/token formats. No dependencies.
        .target(name: "DuetProtocol", swiftSettings: strict),
        // The lock every module uses (`Mutex` on a pthread mutex, which ThreadSanitizer sees). No dependencies.
        .target(name: "DuetLock", swiftSettings: strict),
        // Client-side signaling transports (WebSocket, SSE) used by DuetClient and by the tests.
        .target(
            name: "DuetTransport",
            dependencies: [
                "DuetProtocol", "DuetLock",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The room logic as a pure value (SignalingCore, its rules, the tokens it checks): what `duet serve` runs
        // and what the simulator runs, without the HTTP server.
        .target(
            name: "DuetRooms",
            dependencies: ["DuetProtocol", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The browser client: plain HTML/CSS/JavaScript modules (the page, the network check, the service worker, the
        // engine's machines mirrored from DuetClient), shipped as they are; the server serves them.
        .target(name: "DuetWeb", resources: [.copy("Web")], swiftSettings: strict),
        .target(
            name: "DuetServer",
            dependencies: [
                "DuetProtocol", "DuetRooms", "DuetWeb", "CMallocInfo", "DuetLock",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // `/ws` on plain NIO handlers beside Hummingbird's HTTP (Transports/WebSocket/).
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                // HTTPS and WSS without a proxy (`--tls-cert`, `--tls-key`), on swift-nio-ssl.
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // Store/: SQLiteRoomStateStore and PostgresRoomStateStore.
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Push/: Web Push delivery (RFC 8030) to the browsers' push services.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // `mallinfo2()` for the heap-in-use gauge (Glibc does not export it).
        .target(name: "CMallocInfo"),
        // The call engine: pure state machines and the runtime that drives them.
        .target(
            name: "DuetClient",
            dependencies: [
                "DuetProtocol", "DuetTransport", "DuetLock",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The version and the commit a build was made from (`--version`).
        .plugin(name: "StampCommit", capability: .buildTool()),
        .target(name: "DuetVersion", swiftSettings: strict, plugins: ["StampCommit"]),
        .executableTarget(
            name: "duet",
            dependencies: [
                "DuetServer", "DuetProtocol", "DuetVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // GStreamer (webrtcbin) and libnice from the system; only `duet-call` and its tests depend on them, so
        // `swift run duet serve` builds on a machine without GStreamer.
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-webrtc-1.0",
            providers: [
                .apt(["libgstreamer1.0-dev", "libgstreamer-plugins-bad1.0-dev", "libgstreamer-plugins-base1.0-dev", "libnice-dev"])
            ]),
        // The C side of the GStreamer engine: variadic GObject calls, casts and callbacks Swift cannot make.
        .target(
            name: "GStreamerShim", dependencies: ["CGStreamer"], cSettings: [.define("GST_USE_UNSTABLE_API")],
            linkerSettings: ["gstwebrtc-1.0", "gstsdp-1.0", "gstreamer-1.0", "gobject-2.0", "glib-2.0"].map { .linkedLibrary($0) }),
        // `WebRtcEngine` on webrtcbin: test-pattern VP8 video and an Opus tone out, decoded media counted in.
        .target(
            name: "DuetGStreamer",
            dependencies: ["DuetClient", "DuetProtocol", "GStreamerShim", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "duet-call",
            dependencies: [
                "DuetGStreamer", "DuetClient", "DuetProtocol", "DuetVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The deterministic simulator: the server's room logic, two call engines, simulated WebRTC and network,
        // one virtual clock, faults drawn from a seed, invariants checked at every step.
        .target(
            name: "DuetSimulation",
            dependencies: [
                "DuetClient", "DuetRooms", "DuetProtocol", "DuetLock",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "duet-sim",
            dependencies: ["DuetSimulation", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "duet-bench",
            dependencies: [
                "DuetProtocol", "DuetTransport", "DuetLock", "DuetClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "DuetSimulationTests", dependencies: ["DuetSimulation", "DuetClient", "DuetTestBasics"], swiftSettings: strict),
        // Test helpers that need no server: subprocesses, the heavy-work queue, TestFailure.
        .target(name: "DuetTestBasics", swiftSettings: strict),
        // Test support shared by the test targets: the real server on an ephemeral port (and the basics).
        .target(
            name: "DuetTestSupport",
            dependencies: [
                "DuetServer", "DuetProtocol", "DuetTransport", "DuetTestBasics", "DuetLock",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "DuetProtocolTests", dependencies: ["DuetProtocol"], swiftSettings: strict),
        .testTarget(name: "DuetCallTests", dependencies: ["DuetGStreamer", "DuetClient", "DuetTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "DuetClientTests",
            dependencies: [
                "DuetClient", "DuetProtocol", "DuetTestSupport", "DuetServer", "DuetLock", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The room rules alone: no HTTP server linked.
        .testTarget(
            name: "DuetRoomsTests",
            dependencies: ["DuetRooms", "DuetProtocol", "DuetTestBasics", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DuetServerTests",
            dependencies: [
                "DuetServer", "DuetTransport", "DuetProtocol", "DuetTestSupport", "DuetLock",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
    ]
)
