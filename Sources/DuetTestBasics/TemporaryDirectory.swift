import Foundation

/// A fresh directory under the system's temporary directory (the caller removes it).
public func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "duet-test-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
