#!/bin/sh
# The cluster benchmark (docs/benchmarks.md, "Cluster"): release builds, then benchmarks/cluster.py in a network
# namespace of its own (cluster.py's nodes and nginx use fixed ports). Needs nginx, PostgreSQL 15 (postgresql),
# openssl, unshare and ip, and root (network namespace). About 5 minutes (the PostgreSQL outage at the same scale last). CLUSTER_SKIP_BUILD=1 uses the release
# binaries as they are.
set -eu
cd "$(dirname "$0")/.."
if [ "${CLUSTER_SKIP_BUILD:-0}" != 1 ]; then
    swift build -c release --product duet
    swift build -c release --product duet-bench
fi
export DUET_BINARY="$PWD/.build/release/duet" DUET_BENCH="$PWD/.build/release/duet-bench"
exec unshare -n sh -c 'ip link set lo up && exec python3 benchmarks/cluster.py "$@"' sh "$@"
