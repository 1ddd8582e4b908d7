#!/bin/bash
# `duet call` under LeakSanitizer, for scripts/sanitize.sh leaks (DUET_CALL_BINARY of the peer scenarios). Runs the
# sanitized build (LEAK_DUET_CALL) with GStreamer's own state freed before exit (DUET_GST_DEINIT=1), its reports to
# LEAK_REPORTS.<pid> with whole stacks (the slow unwinder: GLib keeps no frame pointers), and records in LEAK_EXITS
# how each one ended: "start PID" then "exit PID CODE". A `duet call` with a start and no exit was killed before its
# check ran (no report is then no evidence), and sanitize.sh says so.
set -u
echo "start $$" >> "$LEAK_EXITS"
# The scenarios stop a peer with SIGTERM (it leaves the call, then exits): passed on to duet call itself. Trapped before
# it starts, so a SIGTERM that comes first is kept and passed on once it runs.
child=""
pending=""
trap 'if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; else pending=TERM; fi' TERM INT
ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:log_path=$LEAK_REPORTS" LSAN_OPTIONS="suppressions=$LEAK_SUPPRESSIONS" \
  GST_TRACERS="leaks(filters=GstObject)" GST_DEBUG="GST_TRACER:7" GST_DEBUG_NO_COLOR=1 GST_DEBUG_FILE="$LEAK_REPORTS-gst.$$" \
  DUET_GST_DEINIT=1 "$LEAK_DUET_CALL" "$@" &
child=$!
[ -n "$pending" ] && kill -TERM "$child" 2>/dev/null
while true; do
  wait "$child"
  code=$?
  # A wait a trapped signal interrupted returns >128 with the child still running: wait again until it has ended.
  if ! kill -0 "$child" 2>/dev/null; then
    wait "$child" 2>/dev/null
    again=$?
    [ "$again" -ne 127 ] && code=$again
    break
  fi
done
echo "exit $$ $code" >> "$LEAK_EXITS"
exit "$code"
