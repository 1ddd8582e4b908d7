#!/usr/bin/env bash
# The differential replay (issue 14): the simulator writes every Swift CallEngine's inputs and outputs for SEEDS
# seeds (default 1000), the same seeds with one side as `duet call`, and every named scenario; the browser engine
# replays them in Node and must give the same outputs at every step. Exits non-zero on any divergence, printing the
# first one (run, engine, step, input, both outputs). Then it checks that it can say no: a copy of the browser
# engine with the ICE-restart cooldown changed must diverge.
#
# usage: scripts/differential.sh [SEEDS]
# Results: .build/results/$DUET_RUN_ID/differential/ (report.json: runs, steps, diverging runs, commit, run id);
# the traces themselves go to .build/differential/traces (rewritten each run).
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${1:-1000}"
[[ "$seeds" =~ ^[0-9]+$ ]] || { echo "usage: scripts/differential.sh [SEEDS]" >&2; exit 2; }
export DUET_RUN_ID="${DUET_RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}"
results=".build/results/$DUET_RUN_ID/differential"
traces=".build/differential/traces"
mkdir -p "$results"
rm -rf "$traces"

# DUET_SIM names an already built duet-sim (scripts/test.sh, whose `swift test` holds the build directory meanwhile).
if [ -n "${DUET_SIM:-}" ]; then
  bin=$DUET_SIM
else
  swift build --product duet-sim >/dev/null
  bin="$(swift build --show-bin-path)/duet-sim"
fi
"$bin" --engine-traces "$traces" --seeds "$seeds" --duet-call | tee "$results/export.txt"

status=0
node Tests/web/differential/replay.mjs "$traces" --report "$results/report.json" | tee "$results/replay.txt" || status=$?
if [ "$status" -ne 0 ]; then
  echo "differential replay: the browser engine and the Swift engine diverge (see above)"
  exit "$status"
fi

# Can it say no? The same replay against a browser engine whose ICE-restart cooldown is 1 ms off must fail, and
# say where (only the named scenarios: they all restart ICE).
mutant="$(mktemp -d)"
trap 'rm -rf "$mutant"' EXIT
cp -r Sources/DuetWeb/Web/js "$mutant/js"
sed -i -E 's/^(  ICE_RESTART_COOLDOWN_MS: )([0-9]+),/echo "\1$((\2 + 1)),"/e' "$mutant/js/constants.js"
grep -q "ICE_RESTART_COOLDOWN_MS" "$mutant/js/constants.js"
if cmp -s Sources/DuetWeb/Web/js/constants.js "$mutant/js/constants.js"; then
  echo "self-check: could not change the cooldown in the copy" >&2; exit 1
fi
mkdir -p "$mutant/traces"
cp "$traces"/scenario-*.jsonl "$mutant/traces/"
if node Tests/web/differential/replay.mjs "$mutant/traces" --js-root "$mutant/js" > "$results/self-check.txt"; then
  echo "self-check FAILED: a browser engine with another ICE-restart cooldown replayed without a divergence" >&2
  exit 1
fi
# The first differing outputs must be the cooldown timer itself (every dump mentions it: teardown cancels all timers).
grep -q "FIRST DIVERGENCE" "$results/self-check.txt" && grep -A1 "first differing output" "$results/self-check.txt" | grep -q '"timer":"iceRestartCooldown"' || {
  echo "self-check FAILED: the mutant diverged without naming the cooldown timer:" >&2; cat "$results/self-check.txt" >&2; exit 1; }
echo "self-check: a browser engine with the ICE-restart cooldown changed diverges ($(head -1 "$results/self-check.txt"))"

# And one transition of a JS machine: a replaced call torn down like a room that is gone (B15 must diverge).
rm -rf "$mutant/js" && cp -r Sources/DuetWeb/Web/js "$mutant/js"
sed -i 's/kind: TEARDOWN.replaced }/kind: TEARDOWN.roomGone }/' "$mutant/js/machines/call-phase-machine.js"
if cmp -s Sources/DuetWeb/Web/js/machines/call-phase-machine.js "$mutant/js/machines/call-phase-machine.js"; then
  echo "self-check: could not change the replaced transition in the copy" >&2; exit 1
fi
if node Tests/web/differential/replay.mjs "$mutant/traces" --js-root "$mutant/js" > "$results/self-check-transition.txt"; then
  echo "self-check FAILED: a browser engine with the replaced transition changed replayed without a divergence" >&2
  exit 1
fi
grep -q "FIRST DIVERGENCE" "$results/self-check-transition.txt" || { cat "$results/self-check-transition.txt" >&2; exit 1; }
echo "self-check: a browser engine with one transition changed diverges ($(head -1 "$results/self-check-transition.txt"))"
