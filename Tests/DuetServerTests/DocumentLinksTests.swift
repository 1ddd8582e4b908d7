import DuetTestBasics
import Foundation
import Testing

/// Every relative link of the README, the changelog, CONTRIBUTING.md and `docs/` resolves (issue 35): the file or folder exists, and an anchor names
/// a heading of the file it points into (GitHub's anchors: lowercase, punctuation dropped, spaces to hyphens).
/// Links to the web and links inside code are not followed. Pure file reading: the quick tier runs it.
@Suite struct DocumentLinksTests {
    static let documents: [String] = {
        let docs = (try? FileManager.default.contentsOfDirectory(atPath: packageRoot + "/docs")) ?? []
        return ["README.md", "CHANGELOG.md", "CONTRIBUTING.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    }()

    @Test func theReadmeIsAFrontDoorWithBothCommands() throws {
        let readme = try String(contentsOfFile: packageRoot + "/README.md", encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 150, "README.md has \(lines) lines: reference belongs in docs/")
        #expect(readme.contains("swift run duet serve"), "the command that runs the product")
        #expect(readme.contains("./scripts/test.sh "), "the command that passes every test")
    }

    @Test func everyRelativeLinkResolves() throws {
        #expect(Self.documents.count > 10)
        var broken: [String] = []
        for document in Self.documents {
            let text = try String(contentsOfFile: packageRoot + "/" + document, encoding: .utf8)
            let folder = (document as NSString).deletingLastPathComponent
            for target in Self.links(in: text) {
                if let problem = Self.problem(with: target, from: document, in: folder) {
                    broken.append("\(document): \(target) — \(problem)")
                }
            }
        }
        #expect(broken.isEmpty, "links that lead nowhere:\n\(broken.joined(separator: "\n"))")
    }

    @Test func aBrokenLinkOrAnchorIsFound() {
        #expect(Self.problem(with: "nowhere.md", from: "README.md", in: "") != nil)
        #expect(Self.problem(with: "docs/protocol.md#no-such-heading", from: "README.md", in: "") != nil)
        #expect(Self.problem(with: "docs/protocol.md", from: "README.md", in: "") == nil)
        #expect(Self.links(in: "see [a](b.md) and `[c](d.md)` and [e](https://x.example/)\n```\n[f](g.md)\n```\n") == ["b.md"])
        #expect(Self.links(in: "[a](b.md \"a title\")") == ["b.md"])
        #expect(Self.headings(in: "# One\n```sh\n# a comment\n```\n## Two\n") == ["# One", "## Two"])
        #expect(Self.anchor(of: "## Ringing (issue 31 amendment)") == "ringing-issue-31-amendment")
        #expect(Self.anchor(of: "### `duet call`: a headless peer") == "duet-call-a-headless-peer")
    }

    /// The targets of `[text](target)` links outside code spans and fenced blocks, web links left out.
    static func links(in markdown: String) -> [String] {
        var found: [String] = []
        var fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if fenced { continue }
            let outsideCode = line.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: " ")
            // `[text](target)` or `[text](target "title")`; `<target>` is not used in these documents.
            for match in outsideCode.matches(of: /\]\(([^)\s]+)(?:\s+"[^"]*")?\)/) {
                let target = String(match.output.1)
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                found.append(target)
            }
        }
        return found
    }

    static func problem(with target: String, from document: String, in folder: String) -> String? {
        let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        let path = parts[0].isEmpty ? document : (folder.isEmpty ? parts[0] : folder + "/" + parts[0])
        let full = (packageRoot + "/" + path as NSString).standardizingPath
        guard FileManager.default.fileExists(atPath: full) else { return "no such file" }
        guard parts.count == 2 else { return nil }
        guard let text = try? String(contentsOfFile: full, encoding: .utf8) else { return "unreadable" }
        let anchors = Set(headings(in: text).map(anchor(of:)))
        return anchors.contains(parts[1]) ? nil : "no heading with anchor #\(parts[1])"
    }

    /// The heading lines of a Markdown text (`#`… outside fenced blocks: a shell comment in a code block is no heading).
    static func headings(in markdown: String) -> [String] {
        var found: [String] = []
        var fenced = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if !fenced, line.hasPrefix("#") { found.append(String(line)) }
        }
        return found
    }

    /// GitHub's anchor of a heading line.
    static func anchor(of heading: String) -> String {
        let title = heading.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
        return String(
            title.compactMap { character -> Character? in
                if character == " " { return "-" }
                if character.isLetter || character.isNumber || character == "-" || character == "_" { return character }
                return nil
            })
    }
}
