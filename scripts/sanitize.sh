#!/usr/bin/env bash
# The sanitizers over Duet's own concurrent code (issue 53, point 4):
#
#   scripts/sanitize.sh [thread|address|all]     (all by default)
#
# - thread: ThreadSanitizer over the in-process suites — protocol, rooms (SignalingCore), the client's machines and
#   runtimes (DuetClient, two DuetCall runtimes against a real server), the server (hub, shards, WebSocket on NIO, SSE,
#   the SQLite store, Web Push) — everything the quick tier runs, built with `--sanitize=thread`.
# - address: AddressSanitizer (memory errors: overflows, use after free) over the same suites and GStreamerEngineTests,
#   built with `--sanitize=address`. Not yet: LeakSanitizer over the C shim as duet-call runs it (the shim runs only in
#   duet-call's processes, which the peer scenarios start; see Tests/sanitize/README.md).
#
# Each sanitizer builds into a scratch directory of its own (.build-tsan, .build-asan: nothing of .build is rebuilt)
# and writes its reports and test output under .build/results/<run>/sanitize/. A report fails the run
# (halt_on_error=1): nothing is suppressed but what Tests/sanitize/*.supp lists, each line with its proof that it is
# not Duet's. Not in the default tier (two instrumented builds are ~20 minutes on two cores, more than the suite's
# budget leaves): in the long tier (scripts/test.sh --long), and by hand after a change to locks, shards or the shim.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
case "$which" in thread|address|all) ;; *) echo "usage: scripts/sanitize.sh [thread|address|all]" >&2; exit 64 ;; esac
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
echo "sanitize: results under $out"
exit "$status"
