#!/usr/bin/env bash
# The one command that passes every test on a fresh machine: installs what the tests need
# (Debian packages), builds, and runs the whole suite.
#
#   scripts/test.sh            the default tier (what .ci/run runs): everything that proves the product, at most
#                              35 minutes from a clean clone on a 2-core machine (docs/testing.md)
#   scripts/test.sh --quick    the pure machines, protocol, rooms, in-process server tests and the JS unit tests:
#                              at most 5 minutes after the build, the loop to run after every edit
#   scripts/test.sh --long     the default tier with the long forms: the 10,000-seed sweeps, the 30-minute soak,
#                              5 minutes of fuzzing per target, the release .deb installed into a root without Swift,
#                              and the thread, address and leak sanitizers (scripts/sanitize.sh)
#   scripts/test.sh [--quick|--long] ARGS…   ARGS go to `swift test` (e.g. --filter BrowserCallTests); with ARGS
#                              the differential replay and the fuzz smoke are left out
#
# Every run writes its timing table (stages, suites, scenarios, the 25 slowest, what each waits on) to
# .build/results/$DUET_RUN_ID/timing/ and prints the total and the slowest at the end (scripts/timing.py).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=default
case "${1:-}" in
  --quick) tier=quick; shift ;;
  --long) tier=long; shift ;;
esac
export DUET_TEST_TIER=$tier

# Every result of this run goes under .build/results/$DUET_RUN_ID/ (Tests/e2e/results.py): run.json with the
# commit and start, then the end and exit status; each scenario's outcome; the sweep; screenshots; the timing. Nothing
# tracked is written: scripts/publish-results.sh makes docs/ from a complete run.
export DUET_RUN_ID="${DUET_RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')}"
timing=".build/results/$DUET_RUN_ID/timing"
# Each e2e scenario counts its CPU in a cgroup of its own (Tests/e2e/phase_timing.py) and removes it when it ends;
# one a straggler process kept alive is removed here, by a later run, once empty.
rmdir /sys/fs/cgroup/cpuacct/duet-jobs/*/ 2>/dev/null || true
mkdir -p "$timing"
# How busy the machine is while the run waits or computes (timing/cpu.tsv, every 5 s, ends with this script).
python3 scripts/timing.py --sample-cpu "$timing/cpu.tsv" $$ >/dev/null 2>&1 &
# stage NAME COMMAND…: runs COMMAND, records its wall time and exit status in stages.tsv, returns its status.
stage() {
  local name=$1 start end rc=0
  shift
  start=$(date +%s.%N)
  # (Called in a `||` list, where bash ignores -e inside functions: a function stage returns its failures itself.)
  "$@" || rc=$?
  end=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$name" "$start" "$end" "$rc" >> "$timing/stages.tsv"
  return "$rc"
}

install_tools() {
  # Real parts the tests start: coturn (TURN), Chromium (the browser client), Node.js (the browser engine's
  # unit tests), GStreamer (duet-call), iproute2 + util-linux (network namespaces), iptables (the chaos suite
  # cuts one plane at a time), curl, python3.
  need=()
  command -v turnserver >/dev/null || need+=(coturn)
  command -v chromium >/dev/null || need+=(chromium)
  # Firefox ESR, driven through its built-in WebDriver BiDi (Tests/e2e/browser/bidi.py; Debian has no geckodriver).
  command -v firefox-esr >/dev/null || need+=(firefox-esr)
  command -v node >/dev/null || need+=(nodejs)
  # GStreamer (webrtcbin, libnice) for duet-call and its tests, with the headers it builds against.
  pkg-config --exists gstreamer-webrtc-1.0 nice 2>/dev/null || need+=(pkg-config gstreamer1.0-plugins-bad gstreamer1.0-nice \
    gstreamer1.0-plugins-good gstreamer1.0-plugins-base libgstreamer1.0-dev libgstreamer-plugins-bad1.0-dev \
    libgstreamer-plugins-base1.0-dev libnice-dev)
  command -v ip >/dev/null || need+=(iproute2)
  command -v unshare >/dev/null || need+=(util-linux)
  command -v iptables >/dev/null || need+=(iptables)
  command -v curl >/dev/null || need+=(curl)
  command -v python3 >/dev/null || need+=(python3)
  python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
  command -v openssl >/dev/null || need+=(openssl)
  # The deployment tests (DeployTests) run deploy/ for real: nginx in front (nginx -t, then a call through it),
  # systemd-analyze verify on the units, nft -c on the firewall.
  command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx)
  # dpkg-shlibdeps: the long tier's package (scripts/package.sh works out the .deb's dependencies with it).
  command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
  command -v systemd-analyze >/dev/null || need+=(systemd)
  command -v nft >/dev/null || [ -x /usr/sbin/nft ] || need+=(nftables)
  # The store tests (Tests/DuetServerTests/Store) and the cluster tests run PostgreSQL 15 of their own, each in a
  # directory of its own (Tests/e2e/cluster/postgres.py), as an unprivileged user.
  [ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql)
  if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq || return
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null || return
    # The tests start nginx themselves, inside namespaces; a package that started its default site on the machine's
    # own port 80 (on a host that runs systemd) is stopped again.
    if [[ " ${need[*]} " == *" nginx "* ]] && command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
      $sudo systemctl disable --now nginx >/dev/null 2>&1 || true
    fi
    # Likewise the cluster Debian creates and starts on port 5432: the tests never use it.
    if [[ " ${need[*]} " == *" postgresql "* ]] && command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
      $sudo systemctl disable --now postgresql >/dev/null 2>&1 || true
    fi
  fi

  # aiortc (pip): the DTLS man in the middle of Tests/e2e/browser/dtls_mitm.py (issue 19's safety-code check).
  # (A Debian python3 refuses pip installs into the system unless told; a pyenv or venv python does not need it.)
  python3 -c "import aiortc" 2>/dev/null || python3 -m pip install --quiet "aiortc==1.16.0" \
    || python3 -m pip install --quiet --break-system-packages "aiortc==1.16.0" || return
  # http_ece and py_vapid (pip): the push service of the Web Push tests (Tests/e2e/push) decrypts and verifies with them,
  # an implementation that is not Duet's.
  python3 -c "import http_ece, py_vapid" 2>/dev/null || python3 -m pip install --quiet "http_ece==1.2.1" "py_vapid==1.9.6" \
    || python3 -m pip install --quiet --break-system-packages "http_ece==1.2.1" "py_vapid==1.9.6" || return
}
stage install install_tools
python3 Tests/e2e/results.py start "$tier" "$@"

# The quick tier leaves out every suite that starts a browser, a peer, coturn, nginx, PostgreSQL, a load generator or
# a seed sweep (scripts/heavy-suites, one suite a line, made one regular expression; docs/testing.md lists what each
# tier holds).
quick_skip=$(grep -v '^#' scripts/heavy-suites | paste -sd'|')
test_args=("$@")
[ "$tier" = quick ] && test_args+=(--skip "$quick_skip")

# At most 64 test cases in flight (with no bound, Swift Testing starts every one at once: about 400 on two cores,
# where in-process servers missed their own bounds while starting, and the test process once crashed in that crowd).
# Swift Testing counts a test among them from its start, so the scenarios waiting for a slot of OneAtATime hold most
# places and the in-process tests run as the queue of scenarios drains, beside the scenarios, not in the storm at the
# start. (192, tried, started them all beside the sweeps: two in-process tests missed their bounds in one run.) Their
# times in the xunit file therefore include their wait for a place; scripts/timing.py lists heavy jobs by their run.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-64}

status=0
# The code's format (.swift-format): a few seconds, in every tier. Its verdict counts at the end but stops nothing, so
# a layout nit still gets every test's result. The layout is swift-format 6.3's (the toolchain's `swift format`):
# another version lays some code out otherwise, so with another toolchain the lint is skipped, and says so.
format_status=0
format_version=$(swift format --version 2>/dev/null || true)
if [[ "$format_version" == 6.3.* ]]; then
  stage format swift format lint --strict --recursive --parallel Sources Tests Plugins Package.swift || format_status=$?
else
  echo "format: not linted (swift format ${format_version:-missing}; the code is laid out by 6.3)" >&2
fi
stage build swift build --build-tests || status=$?

# The differential replay and the fuzz smoke run beside `swift test`, one after the other, at the lowest CPU priority
# (nice 19): they take the cores the scenarios leave idle while they wait on the product's timers (timing/cpu.tsv shows
# how much that is) and yield them whenever a test computes. Their output goes to a log each, shown at the end.
side_log=".build/results/$DUET_RUN_ID/side"
side_pid=""
if [ "$status" -eq 0 ] && [ $# -eq 0 ] && [ "$tier" != quick ]; then
  mkdir -p "$side_log"
  # The browser engine against the Swift engine, step by step, on 1,000 seeds, 1,000 with duet call, every scenario.
  # Every libFuzzer target (address sanitizer) from the checked-in seeds and regressions, 10 s each (5 minutes each in
  # the long tier): a crash fails the run (docs/security.md has the long runs).
  # The smoke builds the fuzz package in debug (86 s and 160 CPU-s alone here, against 188 s and 290 CPU-s in release,
  # measured 2026-12-06; the CPU it saves goes to the scenarios beside it); debug also keeps Swift's assertions on.
  # The long tier fuzzes for minutes, where a release build's speed pays.
  fuzz_seconds=10 fuzz_config=debug
  [ "$tier" = long ] && fuzz_seconds=300 fuzz_config=release
  side() {
    local rc=0
    DUET_SIM="$PWD/.build/debug/duet-sim" stage differential scripts/differential.sh > "$side_log/differential.log" 2>&1 || rc=1
    DUET_FUZZ_CONFIG=$fuzz_config stage fuzz scripts/fuzz.sh all "$fuzz_seconds" > "$side_log/fuzz.log" 2>&1 || rc=1
    return "$rc"
  }
  # In a process group of its own (set -m) with a watchdog in it: when this script ends, however (interrupted, killed,
  # failed), the group is stopped within 5 s rather than building and fuzzing on, orphaned.
  set -m
  (
    renice -n 19 -p "$BASHPID" >/dev/null
    group=$BASHPID
    ( while kill -0 $$ 2>/dev/null; do sleep 5; done; kill -TERM -- "-$group" 2>/dev/null ) >/dev/null 2>&1 &
    side
  ) &
  side_pid=$!
  set +m
fi

if [ "$status" -eq 0 ] && [ $# -eq 0 ] && [ "$tier" != quick ]; then
  # Two passes: the in-process suites first (the quick tier's, about 20 s alone), then the heavy ones. Started
  # together, the in-process tests met the sweeps on both cores and the scenarios' start in one storm, where servers
  # and runtimes missed their own bounds (RuntimeIntegrationTests fell back to SSE and never joined within 10 s, run
  # 20261206T083937Z-e3b5b6); apart, each in-process test's xunit time is its own.
  stage "swift test (in-process)" swift test --skip-build --xunit-output "$timing/xunit-in-process.xml" --skip "$quick_skip" \
    || status=$?
  # The heavy pass starts every test at once (256 places, more than it has tests): each heavy job queues for its slot
  # as the pass starts, so the exclusive ones (sweeps, load runs, the soak in little) all run first, one after the
  # other. With 64 places a late suite's exclusive job arrived mid-run and the slots drained for it: three slots idle
  # for up to a minute, twice (run 20261207T142834Z-98596e). Nothing in-process is left to crowd: it ran in the first pass.
  SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=256 \
    stage "swift test (heavy)" swift test --skip-build --xunit-output "$timing/xunit.xml" --filter "$quick_skip" || status=$?
elif [ "$status" -eq 0 ]; then
  stage "swift test" swift test --skip-build --xunit-output "$timing/xunit.xml" ${test_args[@]+"${test_args[@]}"} || status=$?
fi
if [ -n "$side_pid" ]; then
  side_status=0
  wait "$side_pid" || side_status=$?
  for name in differential fuzz; do
    echo "== $name (log: $side_log/$name.log) =="
    if [ "$side_status" -ne 0 ]; then cat "$side_log/$name.log" || true; else tail -8 "$side_log/$name.log" || true; fi
  done
  [ "$side_status" -eq 0 ] || status=1
fi
# The long tier's soak: 30 minutes of call-shaped churn at 2,000 clients on release builds, its log under
# .build/results (benchmarks/soak.py LOG RUN publishes it to docs/benchmarks.md; docs/testing.md says how).
long_soak() {
  swift build -c release --product duet && swift build -c release --product duet-bench || return
  mkdir -p ".build/results/$DUET_RUN_ID/soak"
  DUET_BINARY="$PWD/.build/release/duet" .build/release/duet-bench soak --clients 2000 --seconds 1800 --warmup-seconds 300 \
    > ".build/results/$DUET_RUN_ID/soak/soak.log"
}
# The long tier's package: the release .deb (scripts/package.sh) installed into a root without Swift and run from
# there (Tests/e2e/package/package_install.py, in namespaces of its own; docs/deploy.md "What the tests prove").
long_package() {
  local dist=".build/results/$DUET_RUN_ID/package/dist"
  scripts/package.sh --output "$dist" || return
  local debs=("$dist"/duet_*.deb)
  unshare -n -m sh -c 'ip link set lo up && exec python3 "$0" "$1"' Tests/e2e/package/package_install.py "${debs[0]}"
}
if [ "$status" -eq 0 ] && [ $# -eq 0 ] && [ "$tier" = long ]; then stage package long_package || status=$?; fi
if [ "$status" -eq 0 ] && [ $# -eq 0 ] && [ "$tier" = long ]; then stage soak long_soak || status=$?; fi
# The long tier's sanitizers: ThreadSanitizer and AddressSanitizer over the in-process suites and GStreamerEngineTests,
# then the leak check of the GStreamer shim inside `duet call` (scripts/sanitize.sh; two instrumented builds, ~20
# minutes more than the default tier's budget leaves, so not on every change).
if [ "$status" -eq 0 ] && [ $# -eq 0 ] && [ "$tier" = long ]; then stage sanitize scripts/sanitize.sh all || status=$?; fi
if [ "$format_status" -ne 0 ]; then
  echo "format: swift format lint found code not laid out as .swift-format says (fix: swift format -i -r Sources Tests Plugins Package.swift)" >&2
  [ "$status" -ne 0 ] || status=$format_status
fi
python3 Tests/e2e/results.py finish "$status"
python3 scripts/timing.py ".build/results/$DUET_RUN_ID" || true
# Last, where a CI page that shows only the end of the output still shows it: why each failed test or scenario failed.
[ "$status" -eq 0 ] || python3 Tests/e2e/results.py failures || true
exit "$status"
