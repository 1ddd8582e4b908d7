import DuetClient
import DuetTestSupport
import Foundation
import Testing

/// `QualityTracker`: what counts towards a call's quality. The traces in Tests/fixtures/quality-tracker are worked
/// out by hand (their comments show the arithmetic); Tests/web/quality-tracker.test.mjs replays the same files
/// through the browser's tracker: one rule, two engines, the same outputs.
@Suite struct QualityTrackerTests {
    struct Step: Decodable {
        var event: QualityTracker.Event
        /// The fields the reading must have (only those listed), or nil: no reading.
        var reading: [String: JSONValue]?
        /// The current reading stops being current at this step (`.unknown`).
        var cleared: Bool

        enum CodingKeys: String, CodingKey { case event, reading, cleared }
        enum EventKeys: String, CodingKey { case type, phase, status, atMs, sample }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            reading = try container.decodeIfPresent([String: JSONValue].self, forKey: .reading)
            cleared = try container.decodeIfPresent(Bool.self, forKey: .cleared) ?? false
            let event = try container.nestedContainer(keyedBy: EventKeys.self, forKey: .event)
            switch try event.decode(String.self, forKey: .type) {
            case "phase":
                let name = try event.decode(String.self, forKey: .phase)
                self.event = .phase(try #require(CallPhase(rawValue: name)))
            case "connectionStatus":
                let name = try event.decode(String.self, forKey: .status)
                self.event = .connectionStatus(try #require(ConnectionStatus(rawValue: name)))
            case "polled":
                self.event = .polled(
                    atMs: try event.decode(Double.self, forKey: .atMs),
                    sample: try event.decodeIfPresent(QualitySample.self, forKey: .sample))
            case let other:
                throw DecodingError.dataCorruptedError(forKey: .type, in: event, debugDescription: "unknown event \(other)")
            }
        }
    }

    struct Trace: Decodable {
        var name: String
        var steps: [Step]
        var summary: [String: JSONValue]
    }

    /// A JSON scalar, to compare a listed field with the encoded reading's.
    enum JSONValue: Decodable, Equatable {
        case number(Double)
        case string(String)
        case bool(Bool)
        case null
        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if value.decodeNil() {
                self = .null
            } else if let b = try? value.decode(Bool.self) {
                self = .bool(b)
            } else if let d = try? value.decode(Double.self) {
                self = .number(d)
            } else {
                self = .string(try value.decode(String.self))
            }
        }
    }

    static func traces() throws -> [Trace] {
        let directory = packageRoot + "/Tests/fixtures/quality-tracker"
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { try JSONDecoder().decode(Trace.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0))) }
    }

    /// A value's fields as JSON scalars. Codable leaves nil optionals out, so a field not there reads as null.
    static func fields<T: Encodable>(_ value: T) throws -> [String: JSONValue] {
        try JSONDecoder().decode([String: JSONValue].self, from: JSONEncoder().encode(value))
    }

    @Test func thereAreHandWorkedTracesToReplay() throws {
        #expect(try Self.traces().count >= 3)
    }

    @Test(arguments: try QualityTrackerTests.traces().map(\.name))
    func traceGivesTheReadingsAndSummaryWorkedOutByHand(name: String) throws {
        let trace = try #require(try Self.traces().first { $0.name == name })
        var tracker = QualityTracker()
        for (index, step) in trace.steps.enumerated() {
            let output = tracker.handle(step.event)
            #expect((output == .unknown) == step.cleared, "\(name) step \(index): cleared")
            let reading: QualityReading? = if case .reading(let reading) = output { reading } else { nil }
            guard let expected = step.reading else {
                #expect(reading == nil, "\(name) step \(index): no reading")
                continue
            }
            let got = try Self.fields(try #require(reading, "\(name) step \(index): a reading"))
            for (field, value) in expected { #expect((got[field] ?? .null) == value, "\(name) step \(index): \(field)") }
        }
        let summary = try Self.fields(tracker.summary)
        for (field, value) in trace.summary { #expect((summary[field] ?? .null) == value, "\(name) summary: \(field)") }
    }
}
