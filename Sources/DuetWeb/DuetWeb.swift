import Foundation

/// The browser client: plain HTML, CSS and JavaScript modules under `Web/` (the call page, the network check, the
/// service worker, and the engine's machines mirrored from `DuetClient`, `Web/js/machines/`), served as they are by
/// `duet serve`. A product of its own beside the Swift engine, with its own tests (`Tests/web/`); this module only
/// ships the files.
public enum DuetWeb {
    /// The client's folder in this module's resource bundle (`Duet_DuetWeb.resources/Web`, beside the executable
    /// once installed), or nil when the bundle holds no such folder.
    public static var root: URL? { Bundle.module.url(forResource: "Web", withExtension: nil) }
}
