#!/bin/sh
# The soak (docs/benchmarks.md, "Soak"; issue 34, point 3): release builds, then `duet-bench soak` against a
# `duet serve` of its own on loopback — call-shaped churn at 2,000 clients for SOAK_SECONDS (1,800 by default; set it
# for hours, at most 86,400), sampled every 10 s — then benchmarks/soak.py writes docs/benchmarks-soak.json, the plot
# docs/soak.png and the section. Bounded in clients and time; stops by itself. SOAK_SKIP_BUILD=1 uses the release
# binaries as they are; SOAK_CLIENTS=N, SOAK_WARMUP=S (600 by default: past the longest lifetime of
# what churn leaves behind, tombstones' 300 s, twice — with 300 s the run of daee3d4 judged RSS still rising to its
# plateau at ~500 s, +4.3 %, while every table and the heap had stopped growing) for diagnosis; SOAK_TOKEN_TTL=S (240 by default,
# below the warm-up: the seats that left are remembered that long, so their table is judged at its plateau).
set -eu
cd "$(dirname "$0")/.."
if [ "${SOAK_SKIP_BUILD:-0}" != 1 ]; then
    swift build -c release --product duet
    swift build -c release --product duet-bench
fi
python3 -c 'import matplotlib' 2>/dev/null || pip install --break-system-packages --quiet matplotlib
run="$(date -u +%Y%m%dT%H%M%SZ)-$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')"
out=".build/results/$run/soak"
mkdir -p "$out"
DUET_BINARY="$PWD/.build/release/duet" .build/release/duet-bench soak \
    --clients "${SOAK_CLIENTS:-2000}" --seconds "${SOAK_SECONDS:-1800}" --warmup-seconds "${SOAK_WARMUP:-600}" \
    --token-ttl-seconds "${SOAK_TOKEN_TTL:-240}" \
    | tee "$out/soak.log"
exec python3 benchmarks/soak.py "$out/soak.log" "$run"
