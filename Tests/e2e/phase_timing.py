"""Where a scenario's time goes, measured: each e2e script runs one scenario per process, and the parts of it that are
set-up rather than the behaviour under test (a browser's start, `duet serve`'s start, PostgreSQL's start, a lab's
namespaces) are timed where they happen:

    with phase_timing.spent("browser start"):
        ...

When the process ends, the totals and the process's wall time go to
`.build/results/$DUET_RUN_ID/timing/scenarios/<script> <scenario>.json` (only in a run with an id: scripts/test.sh sets
one), which scripts/timing.py joins with the Swift side's record of the same job. The rest of a scenario's time is
its waits on the product's timers and events. Stdlib only, importable from any e2e folder.
"""
import atexit
import contextlib
import json
import os
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
_started = time.monotonic()
_spent = {}
_lock = threading.Lock()


@contextlib.contextmanager
def spent(kind):
    """Adds the block's wall time to `kind` (blocks of one kind may overlap in threads: both count)."""
    t0 = time.monotonic()
    try:
        yield
    finally:
        add(kind, time.monotonic() - t0)


def add(kind, seconds):
    with _lock:
        _spent[kind] = _spent.get(kind, 0.0) + seconds


def _scenario_key():
    argv = sys.argv
    if len(argv) < 2 or argv[1].startswith("-"):
        return None          # `--limit NAME`, `--help`, a selftest: not a scenario run
    folder = os.path.basename(os.path.dirname(os.path.abspath(argv[0])))
    return f"{folder}/{os.path.basename(argv[0])} {argv[1]}"


def _write():
    run = os.environ.get("DUET_RUN_ID", "")
    key = _scenario_key()
    if not run or "/" in run or run.startswith(".") or not key:
        return
    directory = os.path.join(ROOT, ".build", "results", run, "timing", "scenarios")
    try:
        os.makedirs(directory, exist_ok=True)
        with _lock:
            body = {"job": key, "wallSeconds": round(time.monotonic() - _started, 2),
                    "phases": {k: round(v, 2) for k, v in sorted(_spent.items())}}
        path = os.path.join(directory, key.replace("/", "_") + ".json")
        with open(path + ".tmp", "w") as f:
            json.dump(body, f, sort_keys=True)
        os.replace(path + ".tmp", path)
    except OSError:
        pass


atexit.register(_write)
