import HTTPTypes
import Hummingbird

/// `/` (home), `/call/{roomId}` (the call page), `/check` (the connection check) and the client's static files.
struct WebClientRoutes: Sendable {
    let assets: WebAssets

    func register(on router: Router<DuetRequestContext>) {
        router.get("/") { _, _ in page("/index.html") }
        // Any id gets the page: the page itself explains an invalid or ended link, with a way home.
        router.get("/call/{roomId}") { _, _ in page("/call.html") }
        // The connection check: signaling, STUN, TURN, camera and microphone, tested in the visitor's browser.
        router.get("/check") { _, _ in page("/check.html") }
        // Installable web app (issue 31): the service worker at the root, so that its scope is the whole site (it
        // shows rings and their Accept/Decline when no Duet page is open), and the manifest.
        router.get("/sw.js") { _, _ in file("/sw.js") }
        router.get("/manifest.webmanifest") { _, _ in file("/manifest.webmanifest") }
        for folder in ["js", "css", "img"] {
            router.get("/\(folder)/**") { request, _ in file(request.uri.path) }
        }
        // Any other GET: a 404 that, unlike the router's own, passes through the middleware (security headers).
        router.get("/**") { _, _ in Response.text(.notFound, "no such page") }
    }

    private func page(_ path: String) -> Response {
        guard let asset = assets[path] else {
            return .text(.internalServerError, "the browser client is missing from this build")
        }
        return response(asset)
    }

    private func file(_ path: String) -> Response {
        guard let asset = assets[path] else { return .text(.notFound, "no such file") }
        return response(asset)
    }

    private func response(_ asset: WebAssets.Asset) -> Response {
        // Revalidate every load: a deployed fix must reach the next reload, and the files are tiny. The security
        // headers are added to every response by SecurityHeadersMiddleware.
        let headers: HTTPFields = [.contentType: asset.contentType, .cacheControl: "no-cache"]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: asset.body))
    }
}
