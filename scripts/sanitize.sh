#!/usr/bin/env bash
# The sanitizers over Duet's own concurrent code (issue 53, point 4):
#
#   scripts/sanitize.sh [thread|address|leaks|all]     (all by default)
#
# - thread: ThreadSanitizer over the in-process suites — protocol, rooms (SignalingCore), the client's machines and
#   runtimes (DuetClient, two DuetCall runtimes against a real server), the server (hub, shards, WebSocket on NIO, SSE,
#   the SQLite store, Web Push) — everything the quick tier runs, built with `--sanitize=thread`.
# - address: AddressSanitizer (memory errors: overflows, use after free) over the same suites and GStreamerEngineTests,
#   built with `--sanitize=address`.
# - leaks: LeakSanitizer over the GStreamer C shim as `duet call` runs it: the peer scenarios peer-to-peer (a call
#   and a leave), link-cut (ICE restarts, sessions replaced and freed) and turn-refresh (TURN, credentials renewed),
#   each in a network namespace of its own, with every `duet call` built with `--sanitize=address` and freeing
#   GStreamer's own state before it exits (DUET_GST_DEINIT=1), so what is reported is what the shim or the engine
#   lost; and GStreamer's leaks tracer lists the GStreamer objects still alive then (what LeakSanitizer cannot see:
#   a pipeline kept reachable by its own threads). Every `duet call` must exit by itself (a killed one was never
#   checked): each exit is recorded and judged (Tests/sanitize/leak-checked-duet-call.sh).
#
# Each sanitizer builds into a scratch directory of its own (.build-tsan, .build-asan: nothing of .build is rebuilt)
# and writes its reports and test output under .build/results/<run>/sanitize/. A report fails the run
# (halt_on_error=1): nothing is suppressed but what Tests/sanitize/*.supp lists, each line with its proof that it is
# not Duet's. Not in the default tier (two instrumented builds are ~20 minutes on two cores, more than the suite's
# budget leaves): in the long tier (scripts/test.sh --long), and by hand after a change to locks, shards or the shim.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
case "$which" in thread|address|leaks|all) ;; *) echo "usage: scripts/sanitize.sh [thread|address|leaks|all]" >&2; exit 64 ;; esac
run="${DUET_RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}"
out="$PWD/.build/results/$run/sanitize"
mkdir -p "$out"

# The quick tier's suites (scripts/test.sh): in-process, no browser, peer, coturn, nginx or PostgreSQL. The
# scenarios' processes are not ours to instrument from here (a sanitized `duet` under a browser would measure the
# browser's timing, not races): scripts/heavy-suites, the list the quick tier skips.
heavy=$(grep -v '^#' scripts/heavy-suites | paste -sd'|')
# And VersionTests: it reads the commit stamped into .build/debug's binaries (the plain build's, not this one's).
heavy+='|VersionTests'

status=0
# sanitize KIND SCRATCH "VAR=VALUE …" SWIFT-TEST-ARGS…
sanitize() {
  local kind=$1 scratch=$2 options=$3
  shift 3
  echo "== $kind sanitizer: building into $scratch =="
  swift build --build-tests --sanitize="$kind" --scratch-path "$scratch" 2>&1 | tail -3
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  echo "== $kind sanitizer: $* =="
  # log_path: each process's report in a file of its own (the test process and every binary a test starts).
  # shellcheck disable=SC2086 # $options: VAR=VALUE words, none with a space
  env $options DUET_SANITIZER="$kind" DUET_BINARY="$PWD/$scratch/debug/duet" \
    swift test --skip-build --sanitize="$kind" --scratch-path "$scratch" --xunit-output "$out/$kind.xml" "$@" \
    > "$out/$kind-tests.log" 2>&1 || { echo "$kind: the tests failed (log: $out/$kind-tests.log)"; tail -20 "$out/$kind-tests.log"; return 1; }
  local reports
  reports=$(ls "$out/$kind".* 2>/dev/null | grep -v '\.xml$' || true)
  if [ -n "$reports" ]; then
    echo "$kind: reports:"; for f in $reports; do echo "--- $f"; head -60 "$f"; done
    return 1
  fi
  grep -E "^✔ Test run with|^✘ Test run with|Executed [0-9]+ tests" "$out/$kind-tests.log" | tail -2 || true
  echo "$kind: 0 reports"
}

supp="$PWD/Tests/sanitize"

# leaks: the peer scenarios with a sanitized `duet call` (the server is the plain debug build: it is not what is judged).
leaks() {
  echo "== leak sanitizer: building duet-call into .build-asan =="
  swift build --product duet-call --sanitize=address --scratch-path .build-asan 2>&1 | tail -3
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  swift build --product duet 2>&1 | tail -1
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  local exits="$out/leaks-exits"
  : > "$exits"
  local scenario failed=0 before
  for scenario in peer-to-peer link-cut turn-refresh; do
    echo "== leak sanitizer: $scenario =="
    before=$(grep -c '^start ' "$exits" || true)
    LEAK_DUET_CALL="$PWD/.build-asan/debug/duet-call" LEAK_EXITS="$exits" LEAK_REPORTS="$out/leaks" \
      LEAK_SUPPRESSIONS="$supp/lsan.supp" DUET_CALL_BINARY="$PWD/Tests/sanitize/leak-checked-duet-call.sh" \
      DUET_RUN_ID="$run" DUET_BINARY="$PWD/.build/debug/duet" timeout 300 \
      unshare -n sh -c 'ip link set lo up && exec python3 "$0" "$1"' Tests/e2e/peer/peer_scenarios.py "$scenario" \
      > "$out/leaks-$scenario.log" 2>&1 || { echo "leaks: $scenario failed (log: $out/leaks-$scenario.log)"; tail -15 "$out/leaks-$scenario.log"; failed=1; }
    # Each of the three runs two duet calls: a scenario that ran fewer checked less than it says.
    if [ $(( $(grep -c '^start ' "$exits" || true) - before )) -lt 2 ]; then
      echo "leaks: $scenario started fewer than 2 duet calls"; failed=1
    fi
  done
  local reports checked starts
  starts=$(grep -c '^start ' "$exits" || true)
  checked=$(grep -c '^exit ' "$exits" || true)
  # A report file is written for every duet call that used a suppression too: a report is one that found something.
  reports=$(grep -l "ERROR: " "$out"/leaks.[0-9]* 2>/dev/null || true)
  if [ -n "$reports" ]; then
    echo "leaks: reports:"; for f in $reports; do echo "--- $f"; head -80 "$f"; done
    return 1
  fi
  # What LeakSanitizer cannot see: a GStreamer object nobody will free that is still referenced — a pipeline the shim
  # forgot to unref is kept reachable by its own threads. GStreamer's leaks tracer lists every GstObject alive at
  # gst_deinit (a pipeline kept by mutation: 1,722 objects alive across six processes, 0 LeakSanitizer reports).
  # Allowed: one GstDtlsAgent per process — gst-plugins-bad's dtlsdec keeps the agent of its generated certificate in a
  # static (`generated_cert_agent` in ext/dtls/gstdtlsdec.c) shared by every dtlsdec of the process and never freed
  # (1.22 does not flag it as may-be-leaked, so the tracer lists it); a second one alive would be a session's.
  local alive
  alive=$(awk 'FNR == 1 { agents = 0 } /object-alive, type-name=\(string\)[A-Za-z]/ {
             if ($0 ~ /type-name=\(string\)GstDtlsAgent,/ && agents++ == 0) next; print }' "$out"/leaks-gst.* 2>/dev/null || true)
  if [ -n "$alive" ]; then
    echo "leaks: GStreamer objects alive at exit ($(printf '%s\n' "$alive" | wc -l)):"; printf '%s\n' "$alive" | head -20
    return 1
  fi
  # Every start has its exit, and every exit is 0 (left): a report makes AddressSanitizer exit 1, and a peer killed
  # before its check has no exit.
  if [ "$checked" -eq 0 ] || [ "$checked" -ne "$starts" ] || grep '^exit ' "$exits" | grep -qv ' 0$'; then
    echo "leaks: not every duet call exited 0 by itself:"; cat "$exits"
    return 1
  fi
  # And both checks ran in every one — silence is evidence only then. LeakSanitizer wrote a file for each (the
  # `_dl_init` suppression is used in every process), and the tracer listed the static GstDtlsAgent in each, which it
  # does only at gst_deinit.
  local lsan_files deinit_files
  lsan_files=$(ls "$out"/leaks.[0-9]* 2>/dev/null | wc -l)
  deinit_files=$(grep -l "object-alive, type-name=(string)GstDtlsAgent," "$out"/leaks-gst.* 2>/dev/null | wc -l)
  if [ "$lsan_files" -ne "$starts" ] || [ "$deinit_files" -ne "$starts" ]; then
    echo "leaks: of $starts duet calls, $lsan_files ran LeakSanitizer's check and $deinit_files reached gst_deinit with the tracer"
    return 1
  fi
  [ "$failed" -eq 0 ] || return 1
  echo "leaks: $checked duet call processes checked at exit (LeakSanitizer and the leaks tracer in each), 0 reports"
}
if [ "$which" = thread ] || [ "$which" = all ]; then
  sanitize thread .build-tsan \
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:log_path=$out/thread" \
    --skip "$heavy" || status=1
fi
if [ "$which" = address ] || [ "$which" = all ]; then
  # Memory errors only (detect_leaks=0): LeakSanitizer at exit reports what a process still holds when it ends —
  # the test runner's XCTest and Foundation objects, swift-metrics' counters, Swift's weak-reference side tables,
  # NIOSSL's context — none of it a leak over time, and every `duet` a test starts would exit 1 for it (run
  # sanitize-asan-1: 6 reports, all at exit, 0 memory errors). Memory over time is the soak's to judge.
  sanitize address .build-asan \
    "ASAN_OPTIONS=halt_on_error=1:detect_leaks=0:log_path=$out/address" \
    --skip "${heavy/GStreamerEngineTests|/}" || status=1
fi
if [ "$which" = leaks ] || [ "$which" = all ]; then
  leaks || status=1
fi
echo "sanitize: results under $out"
exit "$status"
