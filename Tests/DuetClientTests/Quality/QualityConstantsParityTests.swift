import DuetClient
import DuetTestSupport
import Foundation
import Testing

/// The browser's `js/quality/quality-constants.js` is the same table as `QualityConstants`: same names, same
/// values, nothing missing and nothing extra (as BrowserConstantsParityTests does for the resilience table).
@Suite struct QualityConstantsParityTests {
    @Test func browserQualityConstantsMatchTheSwiftTable() throws {
        let source = try String(contentsOfFile: packageRoot + "/Sources/DuetWeb/Web/js/quality/quality-constants.js", encoding: .utf8)
        var browser: [String: Double] = [:]
        for line in source.split(separator: "\n") {
            guard let match = line.wholeMatch(of: /\s*([A-Z][A-Z0-9_]*)\s*:\s*([0-9.]+)\s*,?\s*(\/\/.*)?/) else { continue }
            #expect(browser[String(match.1)] == nil, "\(match.1) is defined twice in quality-constants.js")
            browser[String(match.1)] = Double(String(match.2))
        }
        let swift = Dictionary(uniqueKeysWithValues: QualityConstants.table.map { ($0.name, $0.value) })
        #expect(
            browser.count == swift.count && swift.count == 3, "quality-constants.js has \(browser.count), the Swift table \(swift.count)")
        for (name, value) in swift {
            #expect(browser[name] == value, "\(name): browser \(browser[name].map { "\($0)" } ?? "missing"), Swift \(value)")
        }
        #expect(QualityConstants.QUALITY_SAMPLE_INTERVAL_MS == 1_000, "DuetCall's default statsInterval")
    }
}
