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

    /// Loads every file under the bundled `Web` folder, keyed by its URL path (`/js/app.js`).
    static func bundled() -> WebAssets {
        guard let root = Bundle.module.url(forResource: "Web", withExtension: nil) else { return WebAssets(assets: [:]) }
        return load(from: root)
    }

    static func load(from root: URL) -> WebAssets {
        var assets: [String: Asset] = [:]
        let rootPath = root.standardizedFileURL.path
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = files?.nextObject() as? URL {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                let data = try? Data(contentsOf: url)
            else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(rootPath.count))
            assets[relative] = Asset(body: ByteBuffer(bytes: data), contentType: contentType(of: url.pathExtension))
        }
        return WebAssets(assets: assets)
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
