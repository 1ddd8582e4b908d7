import DuetClient
import DuetTestSupport
import Foundation
import Testing

/// The shared fixtures (Tests/fixtures/quality: real stats captured from Chromium and from webrtcbin, clean and
/// lossy): DuetClient must give exactly the readings and summary each one holds — the same the browser engine
/// gives (Tests/web/call-quality.test.mjs reads the same files).
@Suite struct CallQualityFixtureTests {
    struct Fixture: Decodable {
        var name = ""
        var source: String
        var samples: [QualitySample]
        var readings: [QualityReading]
        var summary: QualitySummary
        private enum CodingKeys: String, CodingKey { case source, samples, readings, summary }
    }

    static let directory = packageRoot + "/Tests/fixtures/quality"

    static func fixtures() throws -> [Fixture] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            var fixture = try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            fixture.name = name
            return fixture
        }
    }

    /// The raw captures as they are: webrtcbin's go back through the adapter.
    static func raw(_ name: String) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
        return ((object as? [String: Any])?["raw"] as? [[String: Any]]) ?? []
    }

    @Test func fixturesCoverBothEnginesCleanAndLossy() throws {
        let fixtures = try Self.fixtures()
        let kinds = Set(fixtures.map { "\($0.source)/\($0.name.contains("clean") ? "clean" : "lossy")" })
        #expect(kinds == ["chromium/clean", "chromium/lossy", "webrtcbin/clean", "webrtcbin/lossy"])
        for fixture in fixtures {
            #expect(fixture.samples.count >= 10 && fixture.readings.count == fixture.samples.count, "\(fixture.name)")
        }
    }

    @Test func webrtcbinAdapterTurnsEachRawReportIntoTheFixtureSample() throws {
        for fixture in try Self.fixtures() where fixture.source == "webrtcbin" {
            let raw = try Self.raw(fixture.name)
            #expect(raw.count == fixture.samples.count, "\(fixture.name)")
            for (index, capture) in raw.enumerated() {
                let report = try #require(capture["report"])
                let json = String(decoding: try JSONSerialization.data(withJSONObject: report), as: UTF8.self)
                let decoded = try JSONDecoder().decode(
                    WebRtcBinStats.Decoded.self, from: JSONSerialization.data(withJSONObject: try #require(capture["decoded"])))
                let atMs = try #require((capture["atMs"] as? NSNumber)?.doubleValue)
                let sample = WebRtcBinStats.sample(reportJSON: json, timestampMs: atMs, decoded: decoded)
                #expect(sample == fixture.samples[index], "\(fixture.name) #\(index)")
            }
        }
    }

    /// The stats dialects differ only in spelling (`packets-lost` / `packetsLost`), so the Swift adapter reads
    /// Chromium's real reports too — and must make the samples the browser's adapter made of them (decoded frames
    /// come from the report there, from the shim for webrtcbin: they are handed over as the browser read them).
    @Test func swiftAdapterReadsChromiumReportsAsTheBrowserAdapterDoes() throws {
        for fixture in try Self.fixtures() where fixture.source == "chromium" {
            for (index, capture) in try Self.raw(fixture.name).enumerated() {
                let expected = fixture.samples[index]
                let json = String(decoding: try JSONSerialization.data(withJSONObject: try #require(capture["report"])), as: UTF8.self)
                let atMs = try #require((capture["atMs"] as? NSNumber)?.doubleValue)
                let decoded = WebRtcBinStats.Decoded(
                    framesDecoded: expected.framesDecoded, frameWidth: expected.frameWidth, frameHeight: expected.frameHeight)
                #expect(
                    WebRtcBinStats.sample(reportJSON: json, timestampMs: atMs, decoded: decoded) == expected, "\(fixture.name) #\(index)")
            }
        }
    }

    @Test func readingsAndSummaryAreTheFixtures() throws {
        for fixture in try Self.fixtures() {
            var summary = QualitySummary()
            for (index, sample) in fixture.samples.enumerated() {
                let reading = CallQuality.reading(previous: index == 0 ? nil : fixture.samples[index - 1], current: sample)
                #expect(reading == fixture.readings[index], "\(fixture.name) reading #\(index)")
                summary = summary.adding(reading)
            }
            #expect(summary == fixture.summary, "\(fixture.name) summary")
        }
    }

    @Test func cleanLoopbackIsGoodAndLossIsNot() throws {
        for fixture in try Self.fixtures() {
            let rest = fixture.readings.dropFirst()
            #expect(fixture.readings.first?.level == nil, "\(fixture.name): a first sample alone has no level")
            #expect(rest.allSatisfy { $0.mediaFlowing && $0.level != nil }, "\(fixture.name): media flowed every second")
            let meanLoss = rest.reduce(0) { $0 + ($1.lossPct ?? 0) } / Double(rest.count)
            if fixture.name.contains("clean") {
                #expect(rest.allSatisfy { $0.level == .good }, "\(fixture.name): \(rest.map(\.level))")
                #expect(meanLoss < 1, "\(fixture.name): mean loss \(meanLoss)")
            } else {
                #expect(meanLoss > 5, "\(fixture.name): mean loss \(meanLoss)")
                #expect(rest.filter { $0.level == .good }.count < rest.count / 2 + rest.count % 2, "\(fixture.name): \(rest.map(\.level))")
                #expect((fixture.summary.averageMos ?? 5) < QualityConstants.QUALITY_GOOD_MOS_MIN, "\(fixture.name)")
            }
        }
    }
}
