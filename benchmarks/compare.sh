#!/bin/sh
# Every benchmark in one run (docs/benchmarks.md): release builds, Debian's node-ws for the Node relay.
set -eu
cd "$(dirname "$0")/.."
[ -d /usr/share/nodejs/ws ] || { sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"; $sudo apt-get install -y -qq nodejs node-ws >/dev/null; }
swift build -c release --product duet
swift build -c release --product duet-bench
exec python3 benchmarks/compare.py
