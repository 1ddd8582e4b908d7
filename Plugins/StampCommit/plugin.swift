import Foundation
import PackagePlugin

/// Stamps the git commit a build was made from into `DuetVersion` (`duet --version`, `duet-call --version`). A prebuild
/// command runs on every build; the file is rewritten only when the commit changed, so an unchanged checkout does not
/// recompile. Outside a git checkout of its own (a source tarball, even unpacked inside another repository) the commit is
/// "unknown"; reading the status takes no lock, so a `git commit` running meanwhile is not refused.
@main struct StampCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Commit")
        let script = """
            mkdir -p "$2"
            commit=unknown
            if [ -e "$1/.git" ]; then
              commit=$(git -C "$1" rev-parse --short=10 HEAD 2>/dev/null || echo unknown)
              if [ "$commit" != unknown ] && [ -n "$(git --no-optional-locks -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
                commit="$commit-dirty"
              fi
            fi
            line="package let buildCommit = \\"$commit\\""
            [ "$(cat "$2/Commit.swift" 2>/dev/null)" = "$line" ] || printf '%s\\n' "$line" > "$2/Commit.swift"
            """
        return [
            .prebuildCommand(
                displayName: "Stamp the git commit into DuetVersion",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "stamp-commit", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
