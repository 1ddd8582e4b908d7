#!/bin/sh
# The real-network chaos suite, outside `swift test`: each scenario in a fresh network namespace of its own.
# Rewrites the results table in docs/resilience.md. Usage: scripts/chaos.sh [scenario ...]
set -eu
cd "$(dirname "$0")/.."
swift build --product duet
scenarios="${*:-cut-2s cut-10s cut-2min signaling-cut media-cut server-kill ws-refused rtt-loss turn-expiry}"
for scenario in $scenarios; do
    DUET_BINARY=.build/debug/duet unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/chaos/chaos.py "$0"' "$scenario"
done
