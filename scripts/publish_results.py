"""Regenerates the generated parts of docs/resilience.md, docs/networks.md (the NAT lab's table) and docs/cluster.md
(the cluster scenarios' table) from ONE complete
run under .build/results/<run-id>/ (the results contract: Tests/e2e/results.py) and copies that run's screenshots to
docs/screenshots. Nothing else writes those tables; tests never touch docs/.

    scripts/publish-results.sh [--allow-failed] [RUN_DIR]       (default: the newest complete run)
    scripts/publish-results.sh --dry-run --allow-partial RUN_DIR  (print what would be written, write nothing)

A run is complete when run.json has finishedAt, every scenario the scripts define has its outcome (the lists come
from the scripts themselves: chaos.py's SCENARIOS, the `scenario_*` functions of scenarios.py, peer_scenarios.py,
natlab.py and cluster.py, and rolling.py's rolling restart) and simulation/sweep.json, simulation/sweep-duet-call.json and differential/report.json are
there. A partial run is refused. A failed run (exitStatus != 0, a scenario not recovered, a sweep with violations,
a diverging differential replay) is refused unless --allow-failed: then its rows say **no** with the reason, and a
line above each table says the run failed.
"""
import argparse
import glob
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
E2E = os.path.join(ROOT, "Tests", "e2e")
for folder in ("", "browser", "chaos", "peer", "natlab", "cluster"):
    sys.path.insert(0, os.path.join(E2E, folder))

MARKERS = {"chaos": "chaos-table", "pairs": "chaos-pairs-table", "e2e": "e2e-table", "simulation": "simulation-table", "differential": "differential-table",
           "natlab": "natlab-table", "cluster": "cluster-table"}

# The end-to-end table: the browser and peer scenarios that break something while media flows and pass only if
# the call comes back with no user action. What they break and what they assert is written here; whether they
# recovered, how long it took and what was seen come from the run.
E2E_ROWS = {
    "browser:server-restart": (
        "`BrowserCallTests.serverKilledWhileMediaFlowsThenRestartedRecovers`",
        "the server is killed, media keeps flowing, page goes `recovering` → `retrying`; then restarted",
        "reconnect with backoff, rejoin with the reconnect token: both pages `recovered`, same cids"),
    "browser:relay-restart": (
        "`.turnServerDiesAndReturnsICERestartsThroughIt`",
        "relay-only call, coturn killed, then restarted",
        "ICE restart through the returning relay"),
    "browser:relay-unreachable": (
        "`.unreachableRelayEscalatesAndConnectsWhenItAppears`",
        "relay-only call, coturn not running yet",
        "first-media deadline → `retrying` (\"Connecting…\", Leave call), connects once coturn starts"),
    "browser:cannot-connect": (
        "`.blockedDirectPathWithoutRelayIsExplainedUntilMediaConnects`",
        "no TURN and UDP between the pages blocked: media cannot connect",
        "both pages explain it (no relay configured, the direct path down) while the engine retries; block lifted → ICE restart, media both ways, the explanation gone"),
    "browser:network-online": (
        "`.comingBackOnlineRestartsICE`",
        "the page's network interface goes down and up",
        "`online` → ICE restart (`networkOnline`)"),
    "browser:reload": (
        "`.reloadRejoinsTheSameSeat`",
        "the page is reloaded; later it navigates away and back",
        "seat from `sessionStorage` → `reattached`, same cid; the peer shows \"The other person is reconnecting…\" meanwhile"),
    "peer:link-cut": (
        "`DuetCallPeerTests.linkCutForEightSecondsRecoversWithoutUserAction`",
        "veth link between two namespaces cut for 8 s, `duet-call` ↔ `duet-call`",
        "media watchdog (5 s, ICE still connected) → stall → host's ICE restart; the guest asks for it (`restart_request`)"),
    "peer:link-cut-chromium": (
        "`.linkCutBetweenChromiumAndDuetCallRecovers`",
        "same, Chromium hosting, `duet-call` on the far side",
        "ICE restart by the host"),
    "peer:link-cut-duet-call-hosts": (
        "`.linkCutWhileDuetCallHostsRecovers`",
        "same, `duet-call` hosting",
        "media watchdog stall → ICE restart by `duet-call`, keeping the session Chromium knows"),
    "peer:stall-duet-call-guest": (
        "`.aStalledDuetCallGuestAsksTheHostToRestart`",
        "Chromium hosting; media to `duet-call` (the guest) dropped for 12 s while STUN passes",
        "`duet-call`'s media watchdog → `restart_request` → Chromium's ICE restart (`peerRequest`)"),
}


class Refused(Exception):
    """The run cannot be published; the message says what is missing or failed."""


def expected():
    """Every scenario each suite defines, read from the scripts the suites run."""
    import chaos
    import cluster
    import firefox_faults
    import natlab
    import peer_scenarios
    import postgres_outage
    import rolling
    import scenarios
    return {"chaos": list(chaos.SCENARIOS),
            "pairs": firefox_faults.matrix_scenarios(),
            "browser": list(scenarios.collect(vars(scenarios))),
            "peer": list(scenarios.collect(vars(peer_scenarios))),
            "natlab": list(natlab.SCENARIOS),
            "cluster": list(scenarios.collect(vars(cluster))) + [rolling.SCENARIO, postgres_outage.SCENARIO]}


def folder(suite):
    """Where a suite's outcomes are: firefox_faults.py runs through chaos.main, so its pairs are recorded under chaos/."""
    return "chaos" if suite == "pairs" else suite


def cluster_titles():
    import cluster
    import postgres_outage
    import rolling
    import scenarios
    titles = {name: scenarios.title(name, fn) for name, fn in scenarios.collect(vars(cluster)).items()}
    titles[rolling.SCENARIO] = rolling.TITLE
    titles[postgres_outage.SCENARIO] = postgres_outage.TITLE
    return titles


def chaos_titles():
    import chaos
    return {name: title for name, (title, _) in chaos.SCENARIOS.items()}


def natlab_titles():
    import natlab
    import scenarios
    return {name: scenarios.title(name, fn) for name, fn in natlab.SCENARIOS.items()}


def load(path):
    with open(path) as f:
        return json.load(f)


# MARK: - Reading and judging a run

class Run:
    def __init__(self, path, scenarios):
        self.path = os.path.abspath(path)
        self.missing, self.outcomes, self.run, self.sweep, self.duet_call_sweep, self.differential = [], {}, None, None, None, None
        run_json = os.path.join(self.path, "run.json")
        if not os.path.isfile(run_json):
            self.missing.append("run.json (not a run made by scripts/test.sh)")
        else:
            self.run = load(run_json)
            if "finishedAt" not in self.run or "exitStatus" not in self.run:
                self.missing.append("run.json has no finishedAt/exitStatus: the run has not finished (or was killed)")
        for suite, names in scenarios.items():
            for name in names:
                suite = folder(suite)
                path = os.path.join(self.path, suite, f"{name}.json")
                if os.path.isfile(path):
                    self.outcomes[f"{suite}:{name}"] = load(path)
                else:
                    self.missing.append(f"{suite}/{name}.json")
        self.sweep = self._record("simulation/sweep.json")
        self.duet_call_sweep = self._record("simulation/sweep-duet-call.json")
        self.differential = self._record("differential/report.json")
        self.id = (self.run or {}).get("runId", os.path.basename(self.path))
        for key, outcome in self.outcomes.items():
            if outcome.get("runId") != self.id:
                self.missing.append(f"{key} belongs to run {outcome.get('runId')!r}, not {self.id!r}")
        for name, record in (("simulation/sweep.json", self.sweep), ("simulation/sweep-duet-call.json", self.duet_call_sweep),
                             ("differential/report.json", self.differential)):
            if record is not None and record.get("runId") != self.id:
                self.missing.append(f"{name} belongs to run {record.get('runId')!r}, not {self.id!r}")

    def _record(self, name):
        path = os.path.join(self.path, *name.split("/"))
        if os.path.isfile(path):
            return load(path)
        self.missing.append(name)
        return None

    @property
    def complete(self):
        return not self.missing

    def failures(self):
        found = []
        if self.run and self.run.get("exitStatus", 0) != 0:
            found.append(f"the suite exited with status {self.run['exitStatus']}")
        for key, outcome in self.outcomes.items():
            if not outcome.get("recovered"):
                found.append(f"{key}: {first_line(outcome.get('reason'))}")
        if self.sweep and self.sweep.get("violations", 0) != 0:
            found.append(f"simulation: {self.sweep['violations']} violations")
        if self.duet_call_sweep and self.duet_call_sweep.get("violations", 0) != 0:
            found.append(f"simulation with duet call: {self.duet_call_sweep['violations']} violations")
        if self.differential and self.differential.get("diverging"):
            found.append(f"differential replay: {len(self.differential['diverging'])} diverging runs")
        return found


def newest_complete(results_dir, scenarios):
    runs = [Run(os.path.dirname(p), scenarios) for p in glob.glob(os.path.join(results_dir, "*", "run.json"))]
    runs.sort(key=lambda r: ((r.run or {}).get("startedAt", ""), r.id), reverse=True)
    for run in runs:
        if run.complete:
            return run
    if not runs:
        raise Refused(f"no run in {results_dir}: run scripts/test.sh first")
    raise Refused(f"no complete run in {results_dir}; the newest, {runs[0].path}, lacks:\n  " + "\n  ".join(runs[0].missing))


# MARK: - Rendering

def first_line(text, limit=160):
    text = (text or "").strip()
    line = text.splitlines()[0] if text else "no reason recorded"
    return line if len(line) <= limit else line[:limit - 1] + "…"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def stamp(record):
    short = (record.get("commit") or "unknown")[:7]
    return f"`{short}`" + (" (dirty)" if record.get("dirty") else ""), f"`{record.get('runId')}`"


def seconds(outcome):
    return f"{outcome['seconds']} s" if outcome.get("seconds") is not None else "—"


def heading(run, failures):
    """The line above each table: which run, and whether it failed."""
    commit, rid = stamp({**(run.run or {}), "runId": run.id})
    line = f"From run {rid} (commit {commit}, finished {(run.run or {}).get('finishedAt', '—')}, `scripts/publish-results.sh`)."
    if failures:
        line = "**This run failed** (" + "; ".join(cell(f) for f in failures[:5]) + \
               (f"; and {len(failures) - 5} more" if len(failures) > 5 else "") + "). " + line
    return line


def outcome_row(outcome, missing_text="no outcome recorded (a partial run)"):
    if outcome is None:
        return "**no**", "—", missing_text, "—", "—"
    commit, rid = stamp(outcome)
    if outcome.get("recovered"):
        return "yes", seconds(outcome), cell(outcome.get("how") or "—"), commit, rid
    return "**no**", "—", cell(first_line(outcome.get("reason"))), commit, rid


def chaos_table(run, scenarios):
    titles = chaos_titles()
    rows = ["| Scenario | Recovered? | Time to recover | What recovered it (or why not) | Commit | Run |",
            "|---|---|---|---|---|---|"]
    for name in scenarios["chaos"]:
        rows.append("| " + " | ".join([cell(titles.get(name, name)), *outcome_row(run.outcomes.get(f"chaos:{name}"))]) + " |")
    return rows


def pairs_table(run):
    """One row per fault, one column per browser pair (issue 32): chaos.py's two Chromiums, then firefox_faults.py's."""
    import firefox_faults
    titles = chaos_titles()
    pairs = list(firefox_faults.PAIRS)

    def verdict(key):
        outcome = run.outcomes.get(key)
        if outcome is None:
            return "no outcome recorded (a partial run)"
        return f"yes, {seconds(outcome)}" if outcome.get("recovered") else f"**no**: {cell(first_line(outcome.get('reason'), 80))}"

    commit, rid = stamp({**(run.run or {}), "runId": run.id})
    rows = ["| Fault | Chromium · Chromium | " + " | ".join(firefox_faults.PAIR_TITLES[p] for p in pairs) + " | Commit | Run |",
            "|---|---|" + "---|" * len(pairs) + "---|---|"]
    for fault, cells in firefox_faults.MATRIX.items():
        # A row of chaos.py's fault, or of a fault only firefox_faults.py plays (its Chromium · Chromium cell there too).
        title, chromium = firefox_faults.OWN_ROWS.get(fault, (titles.get(fault, fault), fault))
        row = [cell(title), verdict(f"chaos:{chromium}")]
        row += [verdict(f"chaos:{cells[p]}") if p in cells else "not in the suite" for p in pairs]
        rows.append("| " + " | ".join(row + [commit, rid]) + " |")
    for title, cells in firefox_faults.PAIR_ONLY.values():
        row = [cell(title), "does not apply"] + [verdict(f"chaos:{cells[p]}") if p in cells else "does not apply" for p in pairs]
        rows.append("| " + " | ".join(row + [commit, rid]) + " |")
    return rows


def e2e_table(run, scenarios):
    known = {f"{suite}:{name}" for suite in ("browser", "peer") for name in scenarios[suite]}
    stray = sorted(set(E2E_ROWS) - known)
    if stray:
        raise Refused("scripts/publish_results.py has rows for scenarios the scripts no longer define: " + ", ".join(stray))
    unlisted = sorted(key for key, o in run.outcomes.items()
                      if key.split(":")[0] in ("browser", "peer") and o.get("seconds") is not None and key not in E2E_ROWS)
    if unlisted:
        raise Refused("these scenarios measured a time to recover but have no row in E2E_ROWS "
                      "(scripts/publish_results.py): " + ", ".join(unlisted))
    rows = ["| test | what is broken | what recovers it (asserted) | recovered? | time to recover | what was seen (or why not) | commit | run |",
            "|---|---|---|---|---|---|---|---|"]
    for key, (test, broken, asserted) in E2E_ROWS.items():
        recovered, time_, seen, commit, rid = outcome_row(run.outcomes.get(key))
        rows.append(f"| `{key}` ({test}) | {broken} | {asserted} | {recovered} | {time_} | {seen} | {commit} | {rid} |")
    return rows


def simulation_table(run):
    rows = ["| sides | seeds | violations | recovery after the last heal: p50 / p90 / p99 / max | bound | wall time | commit | run |",
            "|---|---|---|---|---|---|---|---|"]
    for sides, s in (("two browser engines", run.sweep),
                     ("one side `duet call` (host on even seeds, guest on odd)", run.duet_call_sweep)):
        if s is None:
            rows.append(f"| {sides} | — | **no sweep recorded** | — | — | — | — | — |")
            continue
        first, count = s["firstSeed"], s["seeds"]
        seeds = f"{count:,} (seeds {first:,}–{first + count - 1:,})"
        violations = str(s["violations"])
        if s["violations"]:
            shown = "; ".join(f"seed {f['seed']}: {first_line(f['violation'], 80)}" for f in s.get("failures", [])[:3])
            violations = f"**{s['violations']}** ({cell(shown)})"
        r = s["recovery"]
        recovery = " / ".join(f"{r[k] / 1000:.1f} s" if r.get(k) is not None else "—" for k in ("p50Ms", "p90Ms", "p99Ms", "maxMs"))
        commit, rid = stamp(s)
        wall = f"{s['wallSeconds']:.0f} s, {s['build']} build"
        bound = f"{s['boundMs'] / 1000:g} s"
        if s.get("boundWithSilentSenderMs"):  # a silent sender still unmended at the heal has its renewal's time more
            bound += f" ({s['boundWithSilentSenderMs'] / 1000:g} s with a silent sender left)"
        rows.append(f"| {sides} | {seeds} | {violations} | {recovery} | {bound} | {wall} | {commit} | {rid} |")
    return rows


def differential_table(run):
    rows = ["| runs replayed | steps | diverging | commit | run |", "|---|---|---|---|---|"]
    d = run.differential
    if d is None:
        return rows + ["| **no differential replay recorded** | — | — | — | — |"]
    runs = (f"{d['runs']:,}: {d['seeds']:,} seeds, {d.get('duetCallSeeds', 0):,} seeds with one side as `duet call`, "
            f"{d['scenarios']} named scenarios")
    diverging = str(len(d["diverging"]))
    if d["diverging"]:
        shown = "; ".join(f"{x['run']} engine {x['engine']} step {x['step']}" for x in d["diverging"][:3])
        diverging = f"**{len(d['diverging'])}** ({cell(shown)})"
    commit, rid = stamp(d)
    return rows + [f"| {runs} | {d['steps']:,} | {diverging} | {commit} | {rid} |"]


def natlab_time(details):
    """Time to media both ways, and what else the scenario timed (the explanation, TURN added, a recovery)."""
    parts = []
    if details.get("mediaSeconds") is not None:
        parts.append(f"{details['mediaSeconds']} s")
    if details.get("explainedSeconds") is not None:
        parts.append(f"explained after {details['explainedSeconds']} s")
    if details.get("turnAddedToMediaSeconds") is not None:
        parts.append(f"media {details['turnAddedToMediaSeconds']} s after TURN was added")
    if details.get("recoverySeconds") is not None:
        parts.append(f"back {details['recoverySeconds']} s after the change")
    return "; ".join(parts) or "—"


def natlab_path(side):
    """`srflx ↔ prflx`, `relay (TCP) ↔ srflx`, `host (duet call)`: the selected pair as that side saw it."""
    if not side or not side.get("local"):
        return "—"
    local = side["local"] + (f" ({side['relayProtocol'].upper()})" if side.get("relayProtocol") else "")
    text = f"{local} ↔ {side['remote']}" if side.get("remote") else local
    return text + (" (duet call)" if side.get("client") == "duet call" else "")


def natlab_table(run, scenarios):
    titles = natlab_titles()
    rows = ["| Scenario | Passed? | Networks | Time to media both ways | A: local ↔ remote candidate | "
            "B: local ↔ remote candidate | What was seen (or why not) | Commit | Run |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name in scenarios["natlab"]:
        outcome = run.outcomes.get(f"natlab:{name}")
        details = (outcome or {}).get("details") or {}
        sides = details.get("sidesAfter") or details.get("sides") or details.get("sidesAtFailure") or {}
        network = details.get("network") or {}
        networks = "; ".join(f"{k}: {v}" for k, v in sorted(network.items())) or "—"
        passed, _, seen, commit, rid = outcome_row(outcome)
        rows.append("| " + " | ".join([cell(titles.get(name, name)), passed, cell(networks), cell(natlab_time(details)),
                                       cell(natlab_path(sides.get("A"))), cell(natlab_path(sides.get("B"))), seen,
                                       commit, rid]) + " |")
    return rows


def cluster_table(run, scenarios):
    titles = cluster_titles()
    rows = ["| Scenario | Passed? | Time (fault → back) | What was seen (or why not) | Commit | Run |",
            "|---|---|---|---|---|---|"]
    for name in scenarios["cluster"]:
        rows.append("| " + " | ".join([cell(titles.get(name, name)), *outcome_row(run.outcomes.get(f"cluster:{name}"))]) + " |")
    return rows


def replace_between(doc, marker, lines, path):
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    if doc.count(begin) != 1 or doc.count(end) != 1 or doc.index(begin) > doc.index(end):
        raise Refused(f"{path} needs exactly one {begin} … {end} pair")
    head, rest = doc.split(begin, 1)
    return head + begin + "\n" + "\n".join(lines) + "\n" + end + rest.split(end, 1)[1]


def render(doc, run, scenarios, path):
    failures = run.failures()
    line = [heading(run, failures), ""]
    doc = replace_between(doc, MARKERS["chaos"], line + chaos_table(run, scenarios), path)
    doc = replace_between(doc, MARKERS["pairs"], line + pairs_table(run), path)
    doc = replace_between(doc, MARKERS["e2e"], line + e2e_table(run, scenarios), path)
    doc = replace_between(doc, MARKERS["simulation"], line + simulation_table(run), path)
    return replace_between(doc, MARKERS["differential"], line + differential_table(run), path)


def write_text(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def publish(args):
    scenarios = expected()
    results_dir = os.path.abspath(args.results)
    run = Run(args.run_dir, scenarios) if args.run_dir else newest_complete(results_dir, scenarios)
    if run.missing and not (args.dry_run and args.allow_partial):
        raise Refused(f"{run.path} is not a complete run; missing:\n  " + "\n  ".join(run.missing))
    failures = run.failures()
    if failures and not args.allow_failed:
        raise Refused(f"{run.path} failed (publish it anyway with --allow-failed: its rows will say **no**):\n  "
                      + "\n  ".join(failures))
    doc_path = os.path.join(args.docs, "resilience.md")
    with open(doc_path) as f:
        doc = render(f.read(), run, scenarios, doc_path)
    networks_path = os.path.join(args.docs, "networks.md")
    if not os.path.isfile(networks_path):
        raise Refused(f"{networks_path} is missing (it holds the NAT lab's table between <!-- natlab-table:begin/end -->)")
    with open(networks_path) as f:
        networks = replace_between(f.read(), MARKERS["natlab"], [heading(run, failures), ""] + natlab_table(run, scenarios),
                                   networks_path)
    cluster_path = os.path.join(args.docs, "cluster.md")
    if not os.path.isfile(cluster_path):
        raise Refused(f"{cluster_path} is missing (it holds the cluster table between <!-- cluster-table:begin/end -->)")
    with open(cluster_path) as f:
        cluster_doc = replace_between(f.read(), MARKERS["cluster"], [heading(run, failures), ""] + cluster_table(run, scenarios),
                                      cluster_path)
    shots = sorted(glob.glob(os.path.join(run.path, "screenshots", "*.png")))
    if not shots and not args.allow_partial:
        raise Refused(f"{run.path} has no screenshots (BrowserCallTests writes them to screenshots/)")
    if args.dry_run:
        print(doc)
        print(networks)
        print(cluster_doc)
        print(f"(dry run: {doc_path}, {networks_path}, {cluster_path} and {len(shots)} screenshots not written)", file=sys.stderr)
        return run
    write_text(doc_path, doc)
    write_text(networks_path, networks)
    write_text(cluster_path, cluster_doc)
    target = os.path.join(args.docs, "screenshots")
    os.makedirs(target, exist_ok=True)
    for shot in shots:
        shutil.copyfile(shot, os.path.join(target, os.path.basename(shot)))
    print(f"published run {run.id} ({run.path}): {doc_path}, {networks_path}, {cluster_path}, {len(shots)} screenshots"
          + (f"; the run FAILED ({len(failures)} failures)" if failures else ""))
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", nargs="?", help="a run directory (default: the newest complete run)")
    parser.add_argument("--allow-failed", action="store_true", help="publish a failed run; its rows say **no**")
    parser.add_argument("--dry-run", action="store_true", help="print the regenerated document, write nothing")
    parser.add_argument("--allow-partial", action="store_true", help="with --dry-run only: render a partial run")
    parser.add_argument("--results", default=os.path.join(ROOT, ".build", "results"), help=argparse.SUPPRESS)
    parser.add_argument("--docs", default=os.path.join(ROOT, "docs"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.allow_partial and not args.dry_run:
        parser.error("--allow-partial only renders (--dry-run): docs are made from complete runs")
    try:
        publish(args)
    except Refused as refusal:
        print(f"publish-results: refused: {refusal}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
