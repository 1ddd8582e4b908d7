"""Where a scenario's time goes, measured: each e2e script runs one scenario per process, and the parts of it that are
set-up rather than the behaviour under test (a browser's start, `duet serve`'s start, PostgreSQL's start, a lab's
namespaces) are timed where they happen:

    with phase_timing.spent("browser start"):
        ...

When the process ends, the totals and the process's wall time go to
`.build/results/$DUET_RUN_ID/timing/scenarios/<script> <scenario>.json` (only in a run with an id: scripts/test.sh sets
one), which scripts/timing.py joins with the Swift side's record of the same job. The rest of a scenario's time is
its waits on the product's timers and events. Stdlib only, importable from any e2e folder.

The record also has the CPU-seconds the scenario used, with every process it started (browsers, `duet serve`,
coturn, `duet call`…): the process joins a cgroup of its own (cgroup v1 `cpuacct`, where the machine has it) when
this module is imported, and its children inherit it. On 2 cores that are busy all along, a CPU-second is what a
scenario costs the others (docs/testing.md).
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
        cpu = _cpu_seconds()
        if cpu is not None:
            body["cpuSeconds"] = cpu
        path = os.path.join(directory, key.replace("/", "_") + ".json")
        with open(path + ".tmp", "w") as f:
            json.dump(body, f, sort_keys=True)
        os.replace(path + ".tmp", path)
    except OSError:
        pass
    finally:
        if _cpu_group:
            _leave_cpu_group()


_CPUACCT = "/sys/fs/cgroup/cpuacct"


def _join_cpu_group():
    """A cpuacct cgroup for this process and what it starts, or None (no run id, not a scenario, no cgroup v1)."""
    run = os.environ.get("DUET_RUN_ID", "")
    if not run or "/" in run or run.startswith(".") or not _scenario_key():
        return None
    try:
        # Only where cpuacct is a hierarchy of its own: co-mounted with `cpu`, a group would also get a CPU share of
        # its own and change how the scenarios are scheduled.
        with open("/proc/mounts") as f:
            mounts = [line.split() for line in f]
        if not any(m[1] == _CPUACCT and m[2] == "cgroup" and "cpu" not in m[3].split(",") for m in mounts if len(m) > 3):
            return None
        # A helper a scenario runs (cluster/postgres.py start) is counted in the scenario's group, not a group of its own.
        with open("/proc/self/cgroup") as f:
            if any(":cpuacct:/duet-jobs/" in line for line in f):
                return None
    except OSError:
        return None
    path = os.path.join(_CPUACCT, "duet-jobs", f"{run}-{os.getpid()}")
    try:
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        return path
    except OSError:
        return None


def _cpu_seconds():
    """CPU used so far by this process's cgroup (the exited and killed processes in it included), or None."""
    if not _cpu_group:
        return None
    try:
        with open(os.path.join(_cpu_group, "cpuacct.usage")) as f:
            return round(int(f.read()) / 1e9, 2)
    except (OSError, ValueError):
        return None


def _leave_cpu_group():
    """Back to the root group, and the group removed if nothing is left in it (a straggler keeps it: harmless)."""
    try:
        with open(os.path.join(_CPUACCT, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        os.rmdir(_cpu_group)
    except OSError:
        pass


_cpu_group = _join_cpu_group()
atexit.register(_write)
