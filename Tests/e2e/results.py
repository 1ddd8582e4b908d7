"""Scenario outcomes under `.build/results/<run-id>/`, for every end-to-end suite (chaos, browser, peer, natlab, deploy,
cluster).

Every scenario run writes `<suite>/<scenario>.json` whether it passed or not: `recovered` (true only when every
assert passed), the time to recover and what recovered it when the scenario measures one (`report`), and on a
failure the reason and what was last seen on each side (`watch` registers the pages and peers to look at). Each
outcome carries the run id, the commit and whether the tree was dirty. Tests never write tracked files: the tables
in docs/ are made from one complete run by `scripts/publish-results.sh`.

The run id is `DUET_RUN_ID` (scripts/test.sh sets it for a whole suite run); a script run without it makes its
own, `local-<timestamp>-<hex>`. scripts/test.sh also uses this file to write `run.json`:
    python3 Tests/e2e/results.py start [ARGS...]    # {"runId", "commit", "dirty", "startedAt", "arguments"}
    python3 Tests/e2e/results.py finish STATUS      # adds "finishedAt" and "exitStatus"
"""
import contextlib
import datetime
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RESULTS = os.path.join(ROOT, ".build", "results")
SUITES = ("chaos", "browser", "peer", "natlab", "deploy", "cluster", "package")


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def run_id():
    """This run's id; made once per process when unset and exported, so the processes it starts share it."""
    rid = os.environ.get("DUET_RUN_ID")
    if not rid:
        rid = "local-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
        os.environ["DUET_RUN_ID"] = rid
    if "/" in rid or rid.startswith("."):
        raise ValueError(f"DUET_RUN_ID must be a plain name, not {rid!r}")
    return rid


def run_dir():
    return os.path.join(RESULTS, run_id())


def screenshots_dir():
    return os.path.join(run_dir(), "screenshots")


def _git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, timeout=20)


def commit():
    """`git rev-parse HEAD` at the package root ("unknown" outside a git checkout)."""
    try:
        out = _git("rev-parse", "HEAD")
        return out.stdout.strip() if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def dirty():
    """Whether the tree differs from the commit (`git status --porcelain`, untracked files under .build/ aside, whatever
    status.showUntrackedFiles says)."""
    try:
        out = _git("status", "--porcelain", "--untracked-files=normal")
    except (OSError, subprocess.SubprocessError):
        return True
    if out.returncode != 0:
        return True
    return any(line and not line.startswith("?? .build/") for line in out.stdout.splitlines())


def write_json(path, value):
    """Written whole or not at all: a reader (the publisher, a parallel run) never sees half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def record(suite, scenario, title, recovered, seconds=None, how="", reason=None, last_seen=None, started_at=None,
           details=None):
    """Writes one outcome (the results contract) and returns it. `details`: what the scenario measured besides
    the time (e.g. the NAT lab's time to connect and candidate types per side), also for a failure."""
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r}")
    outcome = {"suite": suite, "scenario": scenario, "title": title, "recovered": bool(recovered),
               "seconds": seconds, "how": how or "", "reason": reason, "lastSeen": last_seen,
               "commit": commit(), "dirty": dirty(), "runId": run_id(),
               "startedAt": started_at or now(), "finishedAt": now()}
    if details:
        outcome["details"] = details
    path = os.path.join(run_dir(), suite, f"{scenario}.json")
    write_json(path, outcome)
    print(f"OUTCOME {'recovered' if recovered else 'FAILED'} -> {os.path.relpath(path, ROOT)}", flush=True)
    return outcome


# MARK: - What a scenario tells the record while it runs

_watched = []     # (name, page or peer) to look at when the scenario fails
_reported = {}    # seconds / how, from report()
_captured = {}    # id(exception) -> (exception, lastSeen): seen when the failure happened, before any cleanup


def reset():
    _watched.clear()
    _reported.clear()
    _captured.clear()


def watch(target, name=None):
    """Registers a Chromium page (cdp.Page) or a duet-call peer (anything with snapshot()) so a failure records
    what it last saw. Returns the target."""
    if all(target is not t for _, t in _watched):
        kind = "page" if hasattr(target, "evaluate") else "duet-call"
        _watched.append((name or f"{kind} {1 + sum(n.startswith(kind) for n, _ in _watched)}", target))
    return target


def report(seconds=None, how=None):
    """A scenario that recovers from a fault reports how long it took (from the heal to whole again) and how."""
    if seconds is not None:
        _reported["seconds"] = round(float(seconds), 1)
    if how is not None:
        _reported["how"] = how


def detail(**values):
    """Adds measurements to the outcome's `details` as the scenario goes, so a failure records what was measured
    before it (a value given again replaces the earlier one)."""
    _reported.setdefault("details", {}).update(values)


def how_recovered(*sides):
    """What brought a call back, as its sides saw it: the ICE restarts they made (with their reasons) and how their
    signaling rejoined after the first join, for Chromium pages (`duet.iceRestarts`, `duet.reconnects`) and
    duet-call peers (their `iceRestart` events)."""
    restarts, rejoins, pages = set(), set(), False
    for side in sides:
        if hasattr(side, "evaluate"):
            pages = True
            restarts.update(side.evaluate("duet.iceRestarts"))
            rejoins.update(side.evaluate("duet.reconnects.slice(1)"))
        else:
            restarts.update(str(e.get("value")) for e in side.snapshot() if e.get("event") == "iceRestart")
    media = f"ICE restart ({', '.join(sorted(restarts))})" if restarts else "media kept its ICE pair (no restart)"
    if not pages:  # duet-call's events do not say how its signaling came back
        return media
    signaling = "signaling rejoined " + ", ".join(f"`{k}`" for k in sorted(rejoins)) if rejoins else "signaling never dropped"
    return f"{media}; {signaling}"


def capture_failing():
    """Called by cleanup code (servers, peers, networks) before it tears things down: when an exception is on its
    way out, what the watched sides show now is what the failure looked like, so keep it for the record."""
    error = sys.exc_info()[1]
    if error is not None and id(error) not in _captured:
        _captured[id(error)] = (error, last_seen())


# What a Chromium page shows: the call's state and its media counters. Never throws; stats() is bounded.
PAGE_STATE = """(async () => {
  const d = window.duet;
  if (!d) return {url: location.href, duet: null};
  let stats;
  try {
    stats = await Promise.race([d.stats(), new Promise(r => setTimeout(() => r('stats() did not answer in 1 s'), 1000))]);
  } catch (e) { stats = 'stats() failed: ' + e; }
  return {url: location.href, page: d.page, screen: d.screen, phase: d.phase, connectionStatus: d.connectionStatus,
          iceConnectionState: d.iceConnectionState, transport: d.transport, badge: d.badge && d.badge.kind,
          iceRestarts: d.iceRestarts, reconnects: d.reconnects, stats};
})()"""


def _seen(target, budget):
    if hasattr(target, "evaluate"):
        return target.evaluate(PAGE_STATE, timeout=max(0.5, min(2.0, budget)))
    if hasattr(target, "snapshot"):
        events = target.snapshot()
        latest = {}
        for event in events:
            latest[event.get("event", "?")] = event
        seen = {"exit": target.proc.poll() if hasattr(target, "proc") else None,
                "lastEvents": events[-8:], "latestByKind": latest}
        if hasattr(target, "log_text"):
            seen["logTail"] = target.log_text()[-1500:]
        return seen
    return repr(target)


def last_seen():
    """What every watched side shows now; a side that cannot be read says why. Never raises, bounded in time."""
    seen, deadline = {}, time.monotonic() + 5
    for name, target in list(_watched):
        budget = deadline - time.monotonic()
        if budget <= 0:
            seen[name] = "not read: out of time"
            continue
        try:
            seen[name] = _seen(target, budget)
        except BaseException as error:  # noqa: BLE001 — a dead page or peer must not hide the failure itself
            seen[name] = f"unreadable: {type(error).__name__}: {error}"
    return seen


def describe(error):
    if isinstance(error, SystemExit):
        return f"terminated (exit {error.code}; SIGTERM from the test's timeout?)" if error.code == 143 else f"exit {error.code}"
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    text = str(error) or type(error).__name__
    if not isinstance(error, AssertionError):
        text = f"{type(error).__name__}: {text}"
    return text[:4000]


def _seen_at(error):
    """What was captured when `error` (or the exception it replaced) was on its way out, else what is seen now."""
    chain, e = [], error
    while e is not None and len(chain) < 10:
        chain.append(e)
        e = e.__context__
    for e in chain:
        hit = _captured.get(id(e))
        if hit and hit[0] is e:
            return hit[1]
    return last_seen()


@contextlib.contextmanager
def outcome(suite, scenario, title):
    """Records the block's outcome: recovered (with what `report` said) if it ends normally, otherwise not
    recovered, with the reason and what was last seen; the exception goes on (the script exits non-zero)."""
    reset()
    started = now()
    try:
        yield
    except BaseException as error:
        record(suite, scenario, title, False, _reported.get("seconds"), _reported.get("how", ""),
               describe(error), _seen_at(error), started, _reported.get("details"))
        raise
    record(suite, scenario, title, True, _reported.get("seconds"), _reported.get("how", ""), None, None, started,
           _reported.get("details"))


# MARK: - failures, for the end of scripts/test.sh

def _clip(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " […]"


def print_failures(directory, limit=700, short=160):
    """Why the run failed, in the last lines of its output (all a CI page may show): every failed test case of the
    xunit files (its first message) and every scenario recorded as not recovered (its reason and what both sides last
    showed). Prints nothing when nothing failed."""
    import xml.etree.ElementTree as ElementTree
    lines = []
    timing = os.path.join(directory, "timing")
    for name in sorted(os.listdir(timing)) if os.path.isdir(timing) else []:
        if not name.endswith(".xml"):
            continue
        try:
            tree = ElementTree.parse(os.path.join(timing, name))
        except (ElementTree.ParseError, OSError) as error:
            lines.append(f"{name}: unreadable ({error})")
            continue
        for case in tree.iter("testcase"):
            for failure in [*case.findall("failure"), *case.findall("error")]:
                message = failure.get("message") or failure.text or "(no message)"
                lines.append(f"test {case.get('classname', '?')}.{case.get('name', '?')}: {_clip(message, limit)}")
    for folder, _, files in sorted(os.walk(directory)):
        if os.path.relpath(folder, directory).split(os.sep)[0] in ("timing", "side"):
            continue
        for name in sorted(files):
            if not name.endswith(".json") or name == "run.json" or name.startswith(".tmp"):
                continue
            try:
                with open(os.path.join(folder, name)) as f:
                    result = json.load(f)
            except (OSError, ValueError) as error:
                lines.append(f"{os.path.relpath(os.path.join(folder, name), directory)}: unreadable ({error})")
                continue
            if isinstance(result, dict) and result.get("recovered") is False:
                seen = result.get("lastSeen")
                lines.append(f"scenario {result.get('suite', '?')}/{result.get('scenario', name)}: "
                             f"{_clip(result.get('reason'), limit)}" + (f" — last seen: {_clip(json.dumps(seen), limit)}" if seen else ""))
    if not lines:
        # A red run with no failed test or scenario on record: a stage failed (the build, the differential replay, the
        # fuzz smoke, the soak) or a test process ended before it wrote its results. Name the stages that failed.
        stages = os.path.join(timing, "stages.tsv")
        failed = []
        if os.path.exists(stages):
            with open(stages) as f:
                failed = [row.split("\t")[0] for row in f.read().splitlines() if row.count("\t") >= 3 and row.split("\t")[3] != "0"]
        if not failed:
            return
        lines = [f"stage {name} failed, with no failed test or scenario on record: its output is above" for name in failed]
    print(f"== what failed in run {os.path.basename(directory)} ({len(lines)} line{'s' if len(lines) != 1 else ''}) ==")
    for line in lines:
        print("  " + line)
    # A CI page may show only the last lines' first characters: the same list once more, a short line each, last.
    print(f"== in short: {len(lines)} failed ==")
    for line in lines:
        print("  " + _clip(line, short))


# MARK: - run.json, for scripts/test.sh

def _cli(argv):
    command = argv[1] if len(argv) > 1 else ""
    path = os.path.join(run_dir(), "run.json")
    if command == "start":
        write_json(path, {"runId": run_id(), "commit": commit(), "dirty": dirty(), "startedAt": now(),
                          "arguments": argv[2:]})
    elif command == "provenance":
        # For the Swift copy of this rule (`Provenance` in DuetSimulation), which a test checks against this one.
        print(json.dumps({"commit": commit(), "dirty": dirty()}))
        return
    elif command == "failures":
        print_failures(run_dir())
        return
    elif command == "finish" and len(argv) == 3:
        with open(path) as f:
            run = json.load(f)
        write_json(path, {**run, "finishedAt": now(), "exitStatus": int(argv[2])})
    else:
        sys.exit("usage: results.py start [ARGS...] | finish STATUS | provenance | failures")
    print(f"run {run_id()}: {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    _cli(sys.argv)
