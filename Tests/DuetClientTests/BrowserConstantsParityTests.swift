import DuetClient
import DuetTestSupport
import Foundation
import Testing

/// The browser client's `constants.js` is the same table as `ResilienceConstants`: same names, same values,
/// nothing missing and nothing extra (seed 001 item 7: the platforms behave alike).
@Suite struct BrowserConstantsParityTests {
    @Test func browserConstantsMatchTheSwiftTable() throws {
        let path = packageRoot + "/Sources/DuetWeb/Web/js/constants.js"
        let source = try String(contentsOfFile: path, encoding: .utf8)
        var browser: [String: Double] = [:]
        for line in source.split(separator: "\n") {
            guard let match = line.wholeMatch(of: /\s*([A-Z][A-Z0-9_]*)\s*:\s*([0-9.]+)\s*,?\s*(\/\/.*)?/) else { continue }
            #expect(browser[String(match.1)] == nil, "\(match.1) is defined twice in constants.js")
            browser[String(match.1)] = Double(String(match.2))
        }
        let swift = Dictionary(uniqueKeysWithValues: ResilienceConstants.table.map { ($0.name, $0.value) })
        #expect(browser.count == swift.count, "constants.js has \(browser.count) constants, the Swift table \(swift.count)")
        for (name, value) in swift {
            #expect(browser[name] == value, "\(name): browser \(browser[name].map { "\($0)" } ?? "missing"), Swift \(value)")
        }
        for name in browser.keys where swift[name] == nil { Issue.record("\(name) exists only in constants.js") }
    }
}
