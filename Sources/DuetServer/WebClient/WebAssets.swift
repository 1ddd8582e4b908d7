import DuetWeb
import Foundation
import NIOCore

/// The browser client's files, read once at start-up: they are small, and serving from memory keeps a
/// page load free of disk I/O and of path tricks (only files that shipped can be named).
struct WebAssets: Sendable {
    struct Asset: Sendable {
        let body: ByteBuffer
        let contentType: String
    }

    private let assets: [String: Asset]
    /// The exact text of every script the pages carry inline: the Content-Security-Policy allows these by hash and
    /// no other inline script.
    private(set) var inlineScripts: Set<String> = []

    /// Loads every file of the browser client (the DuetWeb module's `Web` folder), keyed by its URL path (`/js/app.js`).
    static func bundled() -> WebAssets {
        guard let root = DuetWeb.root else { return WebAssets(assets: [:]) }
        return load(from: root)
    }

    static func load(from root: URL) -> WebAssets {
        var files: [String: (data: Data, pathExtension: String)] = [:]
        let rootPath = root.standardizedFileURL.path
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let data = try? Data(contentsOf: url)
            else { continue }
            files[String(url.standardizedFileURL.path.dropFirst(rootPath.count))] = (data, url.pathExtension)
        }
        var assets: [String: Asset] = [:]
        var inlineScripts: Set<String> = []
        for (path, file) in files {
            var data = file.data
            if file.pathExtension == "html", let page = String(data: data, encoding: .utf8) {
                data = Data(
                    inliningScripts(page, inlined: { inlineScripts.insert($0) }) {
                        files[$0].flatMap { String(data: $0.data, encoding: .utf8) }
                    }.utf8)
            }
            assets[path] = Asset(body: ByteBuffer(bytes: data), contentType: contentType(of: file.pathExtension))
        }
        var web = WebAssets(assets: assets)
        web.inlineScripts = inlineScripts
        return web
    }

    /// A page names a script that must not be able to fail to load on its own (the load guard, whose job is to
    /// notice that the others failed) as `<script src="/js/x.js" data-duet-inline></script>`, and is served with
    /// that file's text inline: one source for every page, nothing extra to fetch. A tag naming no shipped file, or
    /// a script that would end the inline element early (`</script`), is left as it is (and `HTTPAPITests` fails).
    static func inliningScripts(_ page: String, inlined: (String) -> Void = { _ in }, source: (String) -> String?) -> String {
        var page = page
        var searchFrom = page.startIndex
        while let open = page.range(of: "<script src=\"", range: searchFrom..<page.endIndex),
            let quote = page.range(of: "\"", range: open.upperBound..<page.endIndex)
        {
            let tail = "\" data-duet-inline></script>"
            let path = String(page[open.upperBound..<quote.lowerBound])
            guard page[quote.lowerBound...].hasPrefix(tail), let script = source(path),
                script.range(of: "</script", options: .caseInsensitive) == nil
            else {
                searchFrom = quote.upperBound
                continue
            }
            let content = "\n" + script + (script.hasSuffix("\n") ? "" : "\n")
            inlined(content)
            let inline = "<script>" + content + "</script>"
            let start = page.utf8.distance(from: page.startIndex, to: open.lowerBound)
            let end = page.utf8.index(quote.lowerBound, offsetBy: tail.utf8.count)
            page.replaceSubrange(open.lowerBound..<end, with: inline)
            searchFrom = page.utf8.index(page.startIndex, offsetBy: start + inline.utf8.count)
        }
        return page
    }

    subscript(path: String) -> Asset? { assets[path] }

    var isEmpty: Bool { assets.isEmpty }

    private static func contentType(of pathExtension: String) -> String {
        switch pathExtension {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "json", "webmanifest": "application/json"
        default: "application/octet-stream"
        }
    }
}
