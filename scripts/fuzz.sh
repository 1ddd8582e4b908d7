#!/usr/bin/env bash
# Runs a libFuzzer target of the fuzz package (Fuzz/) for a bounded time:
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer flags…]      TARGET: fuzz-envelope, fuzz-json-text, fuzz-sse-parser, fuzz-stun,
#   scripts/fuzz.sh all SECONDS [libFuzzer flags…]                 fuzz-tokens, or all (each in turn)
# Builds the fuzz package (address sanitizer and libFuzzer; DUET_FUZZ_CONFIG=debug for a debug build), starts from a
# copy of the checked-in seeds (Fuzz/Corpus/TARGET/) and of every input that once crashed (Fuzz/Regressions/TARGET/),
# and writes nothing tracked: the growing corpus, the log and any crashing input go to .build/fuzz/TARGET/. Prints
# how many inputs ran; exits non-zero if any input crashed (a trap, a sanitizer report, a timeout, out of memory).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(fuzz-envelope fuzz-json-text fuzz-sse-parser fuzz-stun fuzz-tokens)
usage() {
  echo "usage: scripts/fuzz.sh {$(IFS='|'; echo "${targets[*]}")|all} SECONDS [libFuzzer flags…]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
target=$1
seconds=$2
shift 2
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] || usage
if [ "$target" = all ]; then
  run=("${targets[@]}")
else
  [[ " ${targets[*]} " == *" $target "* ]] || usage
  run=("$target")
fi

config=${DUET_FUZZ_CONFIG:-release}
# SwiftPM's own --sanitize=fuzzer: only then does it leave the executables' entry point alone, so that libFuzzer's
# main is the program's (with -Xswiftc alone, linking fails: undefined symbol fuzz_envelope_main). --sanitize=address
# instruments the C code (BoringSSL). But SwiftPM hands swiftc its sanitizers as separate flags, and swiftc keeps only
# the last -sanitize= it is given: the Swift code would get the address sanitizer and no coverage, and libFuzzer would
# run blind ("no interesting inputs were found"). -Xswiftc -sanitize=fuzzer,address comes after them and wins.
# One Swift build at a time on this machine: the shared lock.
lock=${DUET_BUILD_LOCK:-/tmp/duet-build.lock}
# The same flags for the path query: other flags would make the next build start over.
build=(swift build --package-path Fuzz -c "$config" --sanitize=fuzzer --sanitize=address
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
echo "fuzz: building the fuzz package ($config)"
flock "$lock" "${build[@]}"
bin=$("${build[@]}" --show-bin-path)

# On a trap the Swift runtime's backtracer would take over (slowly, before libFuzzer saves the input): leave crashes to
# libFuzzer, which prints the stack and writes the input to the artifacts.
export SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=no}

status=0
summary=()
for name in "${run[@]}"; do
  out=.build/fuzz/$name
  corpus=$out/corpus
  mkdir -p "$corpus" "$out/artifacts"
  # The seeds and the regressions join the corpus this target has grown so far (kept under .build between runs).
  for seeds in "Fuzz/Corpus/$name" "Fuzz/Regressions/$name"; do
    if [ -d "$seeds" ] && [ -n "$(ls -A "$seeds")" ]; then cp -n "$seeds"/* "$corpus"/; fi
  done
  log=$out/fuzz.log
  echo "fuzz: $name for ${seconds}s (log: $log)"
  # One process, one job (2 cores: the machine has other work); a single input over 10 s counts as a hang.
  code=0
  started=$SECONDS
  touch "$out/.started"
  "$bin/$name" "$corpus" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$out/artifacts/" "$@" >"$log" 2>&1 || code=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  took=$((SECONDS - started))
  line="$name: ${runs:-?} inputs in ${took:-?} s, corpus $(ls "$corpus" | wc -l) files"
  # A build without coverage still runs, blind: count that as a failure, not as inputs tried.
  if [ "$code" -eq 0 ] && ! grep -q '^INFO: Loaded [0-9]* modules' "$log"; then
    code=3
    echo "fuzz: $name has no coverage instrumentation (no 'INFO: Loaded … modules' in $log)" >&2
  fi
  if [ "$code" -ne 0 ]; then
    status=1
    line="$line — FAILED (exit $code); new artifacts: $(find "$out/artifacts" -type f -newer "$out/.started" | tr '\n' ' ')"
    grep -a -m1 -E '^(==[0-9]+==ERROR|Fatal error|.*Fatal error:|SUMMARY|ALARM|==[0-9]+== ERROR)' "$log" || true
    echo "fuzz: last lines of $log:"
    tail -25 "$log" | cut -c1-400
  fi
  echo "fuzz: $line"
  summary+=("$line")
done

[ ${#run[@]} -gt 1 ] && printf 'fuzz: %s\n' "${summary[@]}"
exit "$status"
