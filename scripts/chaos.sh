#!/bin/sh
# The real-network chaos suite, outside `swift test`: each scenario in a fresh network namespace of its own.
# Each records its outcome (recovered or not, and why) under .build/results/$DUET_RUN_ID/chaos/; this writes no
# docs: scripts/publish-results.sh makes the tables from a complete run of scripts/test.sh.
# Usage: scripts/chaos.sh [scenario ...]     (DUET_CHAOS_BREAK=1: ICE restarts broken, see chaos.py)
set -eu
cd "$(dirname "$0")/.."
swift build --product duet
export DUET_RUN_ID="${DUET_RUN_ID:-local-$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}"
all=$(cd Tests/e2e/chaos && python3 -c 'import chaos; print(" ".join(chaos.SCENARIOS))')
scenarios="${*:-$all}"
failed=""
for scenario in $scenarios; do
    DUET_BINARY=.build/debug/duet unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/chaos/chaos.py "$0"' "$scenario" \
        || failed="$failed $scenario"
done
echo "outcomes: .build/results/$DUET_RUN_ID/chaos/"
[ -z "$failed" ] || { echo "failed:$failed"; exit 1; }
