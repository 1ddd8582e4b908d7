"""Tests of the results contract's two ends, on fake runs in a temporary folder (run by ResultsPublisherTests):
Tests/e2e/results.py records every outcome, a failure with its reason and what was last seen; and
scripts/publish_results.py publishes a complete run, refuses a partial or failed one (a failed one is published
with --allow-failed, its rows saying **no**), and picks the newest complete run by default.

    python3 Tests/e2e/test_results.py
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import publish_results  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "browser"))
import firefox_faults  # noqa: E402
import results  # noqa: E402

DOC = """# Resilience

prose before
<!-- chaos-table:begin -->
| old chaos table |
<!-- chaos-table:end -->
<!-- chaos-pairs-table:begin -->
| old pairs table |
<!-- chaos-pairs-table:end -->
prose between
<!-- simulation-table:begin -->
| old simulation row |
<!-- simulation-table:end -->
more prose
<!-- e2e-table:begin -->
| old e2e table |
<!-- e2e-table:end -->

<!-- differential-table:begin -->
| old differential table |
<!-- differential-table:end -->
prose after
"""
COMMIT = "0123456789abcdef0123456789abcdef01234567"
NETWORKS = """# Networks

prose before
<!-- natlab-table:begin -->
| old natlab table |
<!-- natlab-table:end -->
prose after
"""
CLUSTER = """# Cluster

prose before
<!-- cluster-table:begin -->
| old cluster table |
<!-- cluster-table:end -->
prose after
"""
# What a NAT lab outcome measured (natlab.py's `details`): a relayed call over TCP, and a recovery.
NATLAB_DETAILS = {
    "network": {"A": "endpoint-independent NAT", "B": "endpoint-independent NAT, UDP blocked"},
    "connectSeconds": 1.9, "mediaSeconds": 2.8,
    "sides": {"A": {"client": "chromium", "local": "srflx", "remote": "relay", "relayProtocol": None},
              "B": {"client": "chromium", "local": "relay", "remote": "srflx", "relayProtocol": "tcp"}},
}


class FakeResults:
    """A results folder and a docs folder in a temporary directory, and runs written into it by hand."""

    def __init__(self, root):
        self.results, self.docs = os.path.join(root, "results"), os.path.join(root, "docs")
        os.makedirs(os.path.join(self.docs, "screenshots"))
        with open(os.path.join(self.docs, "resilience.md"), "w") as f:
            f.write(DOC)
        with open(os.path.join(self.docs, "networks.md"), "w") as f:
            f.write(NETWORKS)
        with open(os.path.join(self.docs, "cluster.md"), "w") as f:
            f.write(CLUSTER)
        self.expected = publish_results.expected()

    def run(self, rid, started, finished=True, status=0, skip=(), fail=None, sweep=True, violations=0,
            duet_call_sweep=True, differential=True, diverging=()):
        """A run: every expected outcome (recovered, with a time for the timed rows) except `skip`; `fail` is
        (key, reason) for one that did not recover."""
        path = os.path.join(self.results, rid)
        run = {"runId": rid, "commit": COMMIT, "dirty": False, "startedAt": started}
        if finished:
            run.update(finishedAt=started.replace("T00", "T01"), exitStatus=status)
        results.write_json(os.path.join(path, "run.json"), run)
        for suite, names in self.expected.items():
            for name in names:
                key = f"{suite}:{name}"
                if key in skip:
                    continue
                ok = not (fail and fail[0] == key)
                timed = suite in ("chaos", "pairs", "cluster") or key in publish_results.E2E_ROWS
                results.write_json(os.path.join(path, publish_results.folder(suite), f"{name}.json"), {
                    "suite": suite, "scenario": name, "title": name, "recovered": ok,
                    "seconds": 1.5 if ok and timed else None, "how": f"how-{name}" if ok else "",
                    "reason": None if ok else fail[1], "lastSeen": None if ok else {"A": {"phase": "inCall"}},
                    "commit": COMMIT, "dirty": False, "runId": rid, "startedAt": started, "finishedAt": started,
                    **({"details": NATLAB_DETAILS} if suite == "natlab" else {})})
        for wanted, name, seeds in ((sweep, "sweep.json", 10000), (duet_call_sweep, "sweep-duet-call.json", 2000)):
            if wanted:
                results.write_json(os.path.join(path, "simulation", name), {
                    "seeds": seeds, "firstSeed": 1, "violations": violations,
                    "failures": [{"seed": 7, "violation": "not back within the bound"}] if violations else [],
                    "recovery": {"p50Ms": 100, "p90Ms": 12400, "p99Ms": 30300, "maxMs": 42700}, "boundMs": 64000,
                    "build": "debug", "wallSeconds": 61.2, "commit": COMMIT, "dirty": False, "runId": rid})
        if differential:
            results.write_json(os.path.join(path, "differential", "report.json"), {
                "runs": 2034, "seeds": 1000, "duetCallSeeds": 1000, "scenarios": 34, "steps": 573966,
                "diverging": [{"run": r, "engine": 0, "side": "A", "step": 12} for r in diverging],
                "commit": COMMIT, "dirty": False, "runId": rid})
        os.makedirs(os.path.join(path, "screenshots"), exist_ok=True)
        with open(os.path.join(path, "screenshots", "in-call.png"), "wb") as f:
            f.write(b"\x89PNG fake " + rid.encode())
        return path

    def publish(self, *args):
        """(exit code, stderr, the document afterwards)."""
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = publish_results.main(["--results", self.results, "--docs", self.docs, *args])
        with open(os.path.join(self.docs, "resilience.md")) as f:
            return code, err.getvalue(), f.read()

    def networks(self):
        with open(os.path.join(self.docs, "networks.md")) as f:
            return f.read()

    def cluster(self):
        with open(os.path.join(self.docs, "cluster.md")) as f:
            return f.read()


class PublisherTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="duet-publish-test-")
        self.fake = FakeResults(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_complete_run_is_published_with_commit_and_run_id_on_every_row(self):
        path = self.fake.run("20260101T000000Z-aaaaaa", "20260101T000000Z")
        code, err, doc = self.fake.publish(path)
        self.assertEqual(code, 0, err)
        self.assertNotIn("old chaos table", doc)
        self.assertNotIn("old e2e table", doc)
        self.assertNotIn("old simulation row", doc)
        self.assertTrue(doc.startswith("# Resilience\n\nprose before\n") and doc.endswith("prose after\n"))
        rows = [line for line in doc.splitlines() if line.startswith("| ") and not line.startswith("| Scenario")
                and not line.startswith("| test") and not line.startswith("| sides") and not line.startswith("| runs replayed")
                and not line.startswith("| Fault")]
        pair_rows = len(firefox_faults.MATRIX) + len(firefox_faults.PAIR_ONLY)
        self.assertEqual(len(rows), len(self.fake.expected["chaos"]) + pair_rows + len(publish_results.E2E_ROWS) + 2 + 1)
        self.assertNotIn("old pairs table", doc)
        for row in rows:
            self.assertIn("`0123456`", row)
            self.assertIn("`20260101T000000Z-aaaaaa`", row)
            self.assertNotIn("**no**", row)
        for title in publish_results.chaos_titles().values():
            self.assertIn(f"| {title} | yes | 1.5 s |", doc)
        self.assertIn("| two browser engines | 10,000 (seeds 1–10,000) | 0 | 0.1 s / 12.4 s / 30.3 s / 42.7 s | 64 s | 61 s, debug build |", doc)
        self.assertIn("| one side `duet call` (host on even seeds, guest on odd) | 2,000 (seeds 1–2,000) | 0 |", doc)
        self.assertIn("| 2,034: 1,000 seeds, 1,000 seeds with one side as `duet call`, 34 named scenarios | 573,966 | 0 |", doc)
        self.assertNotIn("old differential table", doc)
        self.assertNotIn("failed", doc)
        with open(os.path.join(self.fake.docs, "screenshots", "in-call.png"), "rb") as f:
            self.assertEqual(f.read(), b"\x89PNG fake 20260101T000000Z-aaaaaa")

    def test_partial_runs_are_refused_naming_what_is_missing(self):
        cases = {
            "missing outcome": ({"skip": ("peer:link-cut",)}, "peer/link-cut.json"),
            "unfinished": ({"finished": False}, "has not finished"),
            "no sweep": ({"sweep": False}, "simulation/sweep.json"),
            "no duet call sweep": ({"duet_call_sweep": False}, "simulation/sweep-duet-call.json"),
            "no differential": ({"differential": False}, "differential/report.json"),
        }
        for what, (kwargs, named) in cases.items():
            with self.subTest(what):
                path = self.fake.run(f"20260101T000000Z-{what.replace(' ', '-')}", "20260101T000000Z", **kwargs)
                for flags in ((), ("--allow-failed",)):
                    code, err, doc = self.fake.publish(*flags, path)
                    self.assertEqual(code, 2, err)
                    self.assertIn("not a complete run", err)
                    self.assertIn(named, err)
                    self.assertEqual(doc, DOC, "nothing is written")

    def test_failed_run_is_refused_unless_allowed_then_its_row_says_no(self):
        path = self.fake.run("20260101T000000Z-bbbbbb", "20260101T000000Z", status=1,
                             fail=("chaos:cut-2s", "A: whole after the cut: not true after 90s"))
        code, err, doc = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("failed", err)
        self.assertIn("chaos:cut-2s: A: whole after the cut", err)
        self.assertIn("exited with status 1", err)
        self.assertEqual(doc, DOC)
        code, err, doc = self.fake.publish("--allow-failed", path)
        self.assertEqual(code, 0, err)
        title = publish_results.chaos_titles()["cut-2s"]
        self.assertIn(f"| {title} | **no** | — | A: whole after the cut: not true after 90s | `0123456` |", doc)
        self.assertEqual(doc.count("**This run failed**"), 5, "a line above each table")

    def test_sweep_with_violations_fails_the_run(self):
        path = self.fake.run("20260101T000000Z-cccccc", "20260101T000000Z", violations=2)
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("simulation: 2 violations", err)
        code, err, doc = self.fake.publish("--allow-failed", path)
        self.assertEqual(code, 0, err)
        self.assertIn("| **2** (seed 7: not back within the bound) |", doc)

    def test_a_diverging_differential_replay_fails_the_run(self):
        path = self.fake.run("20260101T000000Z-dddddd", "20260101T000000Z", diverging=("seed-17",))
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("differential replay: 1 diverging runs", err)
        code, err, doc = self.fake.publish("--allow-failed", path)
        self.assertEqual(code, 0, err)
        self.assertIn("| **1** (seed-17 engine 0 step 12) |", doc)

    def test_default_is_the_newest_complete_run(self):
        self.fake.run("20260101T000000Z-old000", "20260101T000000Z")
        self.fake.run("20260102T000000Z-new000", "20260102T000000Z")
        self.fake.run("20260103T000000Z-part00", "20260103T000000Z", skip=("browser:reload",))
        code, err, doc = self.fake.publish()
        self.assertEqual(code, 0, err)
        self.assertIn("`20260102T000000Z-new000`", doc)
        self.assertNotIn("old000", doc)

    def test_no_complete_run_is_refused(self):
        self.fake.run("20260103T000000Z-part00", "20260103T000000Z", skip=("browser:reload",))
        code, err, doc = self.fake.publish()
        self.assertEqual(code, 2)
        self.assertIn("browser/reload.json", err)
        self.assertEqual(doc, DOC)

    def test_a_timed_scenario_without_a_row_is_refused(self):
        path = self.fake.run("20260101T000000Z-dddddd", "20260101T000000Z")
        outcome = os.path.join(path, "browser", "call.json")
        with open(outcome) as f:
            data = json.load(f)
        results.write_json(outcome, {**data, "seconds": 3.0})
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("browser:call", err)

    def test_missing_markers_are_refused(self):
        path = self.fake.run("20260101T000000Z-eeeeee", "20260101T000000Z")
        with open(os.path.join(self.fake.docs, "resilience.md"), "w") as f:
            f.write(DOC.replace("<!-- e2e-table:end -->\n", ""))
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("e2e-table", err)

    def test_the_nat_lab_table_has_a_row_per_scenario_with_time_and_candidate_types(self):
        path = self.fake.run("20260101T000000Z-ffffff", "20260101T000000Z")
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 0, err)
        doc = self.fake.networks()
        self.assertTrue(doc.startswith("# Networks\n\nprose before\n") and doc.endswith("prose after\n"))
        self.assertNotIn("old natlab table", doc)
        rows = [line for line in doc.splitlines() if line.startswith("| ") and not line.startswith("| Scenario")]
        self.assertEqual(len(rows), len(self.fake.expected["natlab"]))
        for name, title in publish_results.natlab_titles().items():
            self.assertIn(name, self.fake.expected["natlab"])
            self.assertIn(f"| {title} | yes | A: endpoint-independent NAT; B: endpoint-independent NAT, UDP blocked | 2.8 s | "
                          f"srflx ↔ relay | relay (TCP) ↔ srflx | how-{name} | `0123456` | `20260101T000000Z-ffffff` |", doc)

    def test_a_failed_nat_lab_scenario_fails_the_run_and_its_row_says_no_with_what_it_measured(self):
        path = self.fake.run("20260101T000000Z-gggggg", "20260101T000000Z",
                             fail=("natlab:direct", "A's local candidate is ['prflx', 'srflx']: relay"))
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("natlab:direct: A's local candidate is", err)
        self.assertEqual(self.fake.networks(), NETWORKS, "nothing is written")
        code, err, _ = self.fake.publish("--allow-failed", path)
        self.assertEqual(code, 0, err)
        doc = self.fake.networks()
        title = publish_results.natlab_titles()["direct"]
        self.assertIn(f"| {title} | **no** | A: endpoint-independent NAT; B: endpoint-independent NAT, UDP blocked | 2.8 s | "
                      "srflx ↔ relay | relay (TCP) ↔ srflx | A's local candidate is ['prflx', 'srflx']: relay |", doc)
        self.assertEqual(doc.count("**This run failed**"), 1)

    def test_every_scenario_of_the_pairs_table_is_run_by_the_suite(self):
        # A cell whose scenario BrowserChaosTests never runs would make every complete run "partial".
        with open(os.path.join(ROOT, "Tests", "DuetServerTests", "Browser", "BrowserChaosTests.swift")) as f:
            suite = f.read()
        missing = [name for name in firefox_faults.matrix_scenarios() if f'"{name}"' not in suite]
        self.assertEqual(missing, [], "scenarios of firefox_faults.MATRIX / PAIR_ONLY that BrowserChaosTests does not run")
        self.assertEqual([name for name in firefox_faults.matrix_scenarios() if name not in firefox_faults.SCENARIOS], [])

    def test_the_pairs_table_has_a_column_per_browser_pair_and_a_failure_says_no(self):
        path = self.fake.run("20260101T000000Z-eeeeee", "20260101T000000Z")
        code, err, doc = self.fake.publish(path)
        self.assertEqual(code, 0, err)
        self.assertIn("| Fault | Chromium · Chromium | Firefox hosts · Chromium | Chromium hosts · Firefox | Firefox · Firefox | Commit | Run |", doc)
        cut = publish_results.chaos_titles()["cut-10s"]
        self.assertIn(f"| {cut} | yes, 1.5 s | yes, 1.5 s | yes, 1.5 s | yes, 1.5 s | `0123456` | `20260101T000000Z-eeeeee` |", doc)
        # A pair without a scenario for a fault says so (not a missing outcome).
        saved = firefox_faults.MATRIX["cut-10s"]
        firefox_faults.MATRIX["cut-10s"] = {p: n for p, n in saved.items() if p != "chromium-hosts-firefox"}
        try:
            self.assertIn(f"| {cut} | yes, 1.5 s | yes, 1.5 s | not in the suite | yes, 1.5 s |",
                          "\n".join(publish_results.pairs_table(publish_results.Run(path, self.fake.expected))))
        finally:
            firefox_faults.MATRIX["cut-10s"] = saved
        # A row of a fault chaos.py does not play takes its Chromium · Chromium cell from firefox_faults.py.
        self.assertIn("| The guest's network comes back (`online`): the guest restarts ICE, the host's answer at least 0.5 s late | yes, 1.5 s | yes, 1.5 s |", doc)
        self.assertIn("| Chromium's ICE restart answered with the DTLS role flipped, then a 10 s cut | does not apply | yes, 1.5 s | does not apply | does not apply |", doc)
        failed = self.fake.run("20260102T000000Z-ffffee", "20260102T000000Z",
                               fail=("pairs:firefox-pair-stall", "B's status left connected while no media reached it"))
        code, err, _ = self.fake.publish(failed)
        self.assertEqual(code, 2)
        self.assertIn("chaos:firefox-pair-stall: B's status left connected", err)
        code, err, doc = self.fake.publish("--allow-failed", failed)
        self.assertEqual(code, 0, err)
        stall = publish_results.chaos_titles()["media-stall"]
        self.assertIn(f"| {stall} | yes, 1.5 s | yes, 1.5 s | yes, 1.5 s | **no**: B's status left connected while no media reached it |", doc)

    def test_the_cluster_table_has_a_row_per_scenario_and_a_failure_says_no(self):
        path = self.fake.run("20260101T000000Z-cccccc", "20260101T000000Z")
        code, err, _ = self.fake.publish(path)
        self.assertEqual(code, 0, err)
        doc = self.fake.cluster()
        self.assertTrue(doc.startswith("# Cluster\n\nprose before\n") and doc.endswith("prose after\n"))
        self.assertNotIn("old cluster table", doc)
        titles = publish_results.cluster_titles()
        self.assertIn("rolling-restart", self.fake.expected["cluster"])
        for name in self.fake.expected["cluster"]:
            self.assertIn(f"| {titles[name]} | yes | 1.5 s | how-{name} | `0123456` | `20260101T000000Z-cccccc` |", doc)
        failed = self.fake.run("20260102T000000Z-dddddd", "20260102T000000Z",
                               fail=("cluster:failover", "the pages came back with other cids"))
        code, err, _ = self.fake.publish(failed)
        self.assertEqual(code, 2)
        self.assertIn("cluster:failover: the pages came back with other cids", err)
        code, err, _ = self.fake.publish("--allow-failed", failed)
        self.assertEqual(code, 0, err)
        self.assertIn(f"| {titles['failover']} | **no** | — | the pages came back with other cids |", self.fake.cluster())

    def test_a_missing_nat_lab_outcome_makes_the_run_partial(self):
        path = self.fake.run("20260101T000000Z-hhhhhh", "20260101T000000Z", skip=("natlab:mapping-flush",))
        code, err, _ = self.fake.publish("--allow-failed", path)
        self.assertEqual(code, 2)
        self.assertIn("natlab/mapping-flush.json", err)

    def test_networks_md_without_markers_is_refused(self):
        path = self.fake.run("20260101T000000Z-iiiiii", "20260101T000000Z")
        with open(os.path.join(self.fake.docs, "networks.md"), "w") as f:
            f.write(NETWORKS.replace("<!-- natlab-table:begin -->\n", ""))
        code, err, doc = self.fake.publish(path)
        self.assertEqual(code, 2)
        self.assertIn("natlab-table", err)
        self.assertEqual(doc, DOC, "resilience.md is not written either")

    def test_expected_lists_come_from_the_scripts(self):
        self.assertIn("cut-2s", self.fake.expected["chaos"])
        self.assertIn("symmetric-no-turn", self.fake.expected["natlab"])
        self.assertIn("server-restart", self.fake.expected["browser"])
        self.assertIn("link-cut-duet-call-hosts", self.fake.expected["peer"])
        for key in publish_results.E2E_ROWS:
            suite, name = key.split(":")
            self.assertIn(name, self.fake.expected[suite])


class OutcomeTests(unittest.TestCase):
    """results.outcome records pass and failure alike, into the run's folder."""

    class FakePeer:
        def __init__(self):
            self.events = [{"event": "phase", "value": "InCall"}]

        def snapshot(self):
            return list(self.events)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="duet-outcome-test-")
        self.saved = results.RESULTS, os.environ.get("DUET_RUN_ID")
        results.RESULTS = self.tmp
        os.environ["DUET_RUN_ID"] = "test-run"

    def tearDown(self):
        results.RESULTS = self.saved[0]
        if self.saved[1] is None:
            os.environ.pop("DUET_RUN_ID", None)
        else:
            os.environ["DUET_RUN_ID"] = self.saved[1]
        shutil.rmtree(self.tmp, ignore_errors=True)

    def read(self, suite, name):
        with open(os.path.join(self.tmp, "test-run", suite, f"{name}.json")) as f:
            return json.load(f)

    def test_a_pass_records_what_was_reported(self):
        with contextlib.redirect_stdout(io.StringIO()), results.outcome("browser", "x", "X"):
            results.report(seconds=2.345, how="ICE restart")
        o = self.read("browser", "x")
        self.assertEqual((o["recovered"], o["seconds"], o["how"], o["reason"], o["runId"]), (True, 2.3, "ICE restart", None, "test-run"))
        self.assertEqual(len(o["commit"]), 40)
        self.assertNotIn("details", o, "no details unless the scenario gave some")

    def test_details_are_recorded_for_a_pass_and_for_a_failure(self):
        with contextlib.redirect_stdout(io.StringIO()), results.outcome("natlab", "d", "D"):
            results.detail(mediaSeconds=2.5, sides={"A": {"local": "srflx"}})
            results.detail(mediaSeconds=2.7)
        self.assertEqual(self.read("natlab", "d")["details"], {"mediaSeconds": 2.7, "sides": {"A": {"local": "srflx"}}})
        with self.assertRaises(AssertionError), contextlib.redirect_stdout(io.StringIO()), results.outcome("natlab", "e", "E"):
            results.detail(connectSeconds=1.0)
            raise AssertionError("B's local candidate is relay")
        o = self.read("natlab", "e")
        self.assertEqual((o["recovered"], o["details"]), (False, {"connectSeconds": 1.0}))

    def test_a_failure_records_the_reason_and_what_was_seen_before_cleanup(self):
        peer = self.FakePeer()
        with self.assertRaises(AssertionError), contextlib.redirect_stdout(io.StringIO()), \
                results.outcome("peer", "y", "Y"):
            results.watch(peer, "duet-call A")
            try:
                raise AssertionError("A receives media again: not true after 60s")
            finally:
                results.capture_failing()  # what cleanup does before it stops things
                peer.events.append({"event": "phase", "value": "Leaving"})  # cleanup changes the picture
        o = self.read("peer", "y")
        self.assertFalse(o["recovered"])
        self.assertEqual(o["reason"], "A receives media again: not true after 60s")
        self.assertEqual(o["lastSeen"]["duet-call A"]["latestByKind"]["phase"]["value"], "InCall")

    def test_a_timeout_and_a_termination_are_failures_too(self):
        for error, reason in ((TimeoutError("chaos cut-2s ran over 300 s"), "TimeoutError: chaos cut-2s ran over 300 s"),
                              (SystemExit(143), "terminated (exit 143; SIGTERM from the test's timeout?)")):
            with self.subTest(reason), self.assertRaises(type(error)), contextlib.redirect_stdout(io.StringIO()), \
                    results.outcome("chaos", "z", "Z"):
                raise error
            o = self.read("chaos", "z")
            self.assertEqual((o["recovered"], o["reason"]), (False, reason))
            self.assertEqual(o["lastSeen"], {})

    def test_the_failures_of_a_run_are_printed_last_each_with_its_reason(self):
        with contextlib.redirect_stdout(io.StringIO()), results.outcome("chaos", "fine", "Fine"):
            pass
        with self.assertRaises(AssertionError), contextlib.redirect_stdout(io.StringIO()), results.outcome("chaos", "bad", "Bad"):
            raise AssertionError("the media path has a round trip of at least 200 ms (RTT 90 ms)" + " and more" * 30)
        timing = os.path.join(self.tmp, "test-run", "timing")
        os.makedirs(timing)
        with open(os.path.join(timing, "xunit-swift-testing.xml"), "w") as f:
            f.write('<testsuites><testsuite name="T"><testcase classname="DuetServerTests.ShutdownTests" '
                    'name="sigtermDrainsThenClosesAndExits()"><failure message="Caught error: connect: 111"/></testcase>'
                    '<testcase classname="X" name="passes()"/></testsuite></testsuites>')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results.print_failures(os.path.join(self.tmp, "test-run"))
        printed = out.getvalue().splitlines()
        long_reason = "the media path has a round trip of at least 200 ms (RTT 90 ms)" + " and more" * 30
        self.assertEqual(printed, [
            "== what failed in run test-run (2 lines) ==",
            "  test DuetServerTests.ShutdownTests.sigtermDrainsThenClosesAndExits(): Caught error: connect: 111",
            "  scenario chaos/bad: " + long_reason,
            # …and once more in short, last: a CI page that shows only the end and cuts long lines shows them all.
            "== in short: 2 failed ==",
            "  test DuetServerTests.ShutdownTests.sigtermDrainsThenClosesAndExits(): Caught error: connect: 111",
            "  " + ("scenario chaos/bad: " + long_reason)[:160] + " […]"])
        os.remove(os.path.join(self.tmp, "test-run", "chaos", "bad.json"))
        os.remove(os.path.join(timing, "xunit-swift-testing.xml"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results.print_failures(os.path.join(self.tmp, "test-run"))
        self.assertEqual(out.getvalue(), "", "nothing failed: nothing printed")
        # Red with nothing on record (the build failed, say): the stages that failed are named.
        with open(os.path.join(timing, "stages.tsv"), "w") as f:
            f.write("install\t1.0\t2.0\t0\nbuild\t2.0\t9.0\t1\n")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results.print_failures(os.path.join(self.tmp, "test-run"))
        self.assertEqual(out.getvalue().splitlines(), [
            "== what failed in run test-run (1 line) ==",
            "  stage build failed, with no failed test or scenario on record: its output is above",
            "== in short: 1 failed ==",
            "  stage build failed, with no failed test or scenario on record: its output is above"])

    def test_an_error_a_test_threw_and_an_unreadable_result_are_failures_too(self):
        timing = os.path.join(self.tmp, "test-run", "timing")
        os.makedirs(timing)
        with open(os.path.join(timing, "xunit-swift-testing.xml"), "w") as f:
            f.write('<testsuites><testsuite name="T"><testcase classname="S" name="threw()"><error>Caught error: timeout</error>'
                    '</testcase></testsuite></testsuites>')
        with open(os.path.join(timing, "xunit-in-process-swift-testing.xml"), "w") as f:
            f.write('<testsuites><testsuite name="T"><testcase classname="S" name="cut')  # the process died writing it
        os.makedirs(os.path.join(self.tmp, "test-run", "chaos"))
        with open(os.path.join(self.tmp, "test-run", "chaos", "half.json"), "w") as f:
            f.write('{"recovered": fal')
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            results.print_failures(os.path.join(self.tmp, "test-run"))
        printed = out.getvalue().splitlines()
        self.assertEqual(printed[0], "== what failed in run test-run (3 lines) ==")
        self.assertTrue(printed[1].startswith("  xunit-in-process-swift-testing.xml: unreadable ("), printed)
        self.assertEqual(printed[2], "  test S.threw(): Caught error: timeout")
        self.assertTrue(printed[3].startswith("  chaos/half.json: unreadable ("), printed)
        self.assertEqual(printed[4], "== in short: 3 failed ==")

    def test_an_unreadable_side_is_named_not_raised(self):
        class DeadPage:
            def evaluate(self, *args, **kwargs):
                raise ConnectionError("Chromium pipe closed")
        results.reset()
        results.watch(DeadPage(), "A")
        self.assertEqual(results.last_seen(), {"A": "unreadable: ConnectionError: Chromium pipe closed"})


class TimingTableTests(unittest.TestCase):
    """scripts/timing.py (issue 50): a run's stages, its slowest tests and jobs, and what each mostly waits on, from
    what the run wrote as it went."""

    def setUp(self):
        self.run = tempfile.mkdtemp(prefix="duet-timing-test-")
        timing = os.path.join(self.run, "timing")
        os.makedirs(os.path.join(timing, "scenarios"))
        with open(os.path.join(self.run, "run.json"), "w") as f:
            json.dump({"runId": "r1", "commit": "abc", "dirty": False, "arguments": ["default"], "exitStatus": 1}, f)
        with open(os.path.join(timing, "stages.tsv"), "w") as f:
            # The fuzz smoke runs beside swift test (scripts/test.sh) and ends first.
            f.write("install\t100.0\t110.0\t0\nbuild\t110.0\t400.0\t0\nfuzz\t400.0\t700.0\t0\nswift test\t400.0\t1900.5\t1\n")
        # Two samples inside the build (both cores busy, then one), one inside swift test, one after the run.
        with open(os.path.join(timing, "cpu.tsv"), "w") as f:
            f.write("200.0\t1.000\n300.0\t0.500\n1000.0\t0.250\n2000.0\t0.900\n")
        with open(os.path.join(timing, "xunit-swift-testing.xml"), "w") as f:
            f.write('''<?xml version="1.0"?><testsuites><testsuite name="TestResults">
<testcase classname="DuetClientTests.CallEngineTests" name="a()" time="2.5"/>
<testcase classname="DuetClientTests.CallEngineTests" name="b()" time="0.5"><failure message="x"/></testcase>
<testcase classname="DuetServerTests.BrowserChaosTests" name="cut()" time="400"/>
</testsuite></testsuites>''')
        jobs = [{"label": "chaos/chaos.py cut-2min", "file": "DuetServerTests/BrowserChaosTests.swift", "load": "shared",
                 "waitedSeconds": 250.0, "ranSeconds": 150.0},
                {"label": "sweepOfSeeds()", "file": "DuetSimulationTests/SimulationTests.swift", "load": "exclusive",
                 "waitedSeconds": 0.0, "ranSeconds": 30.0},
                {"label": "cluster/cluster.py failover", "file": "DuetServerTests/ClusterTests.swift", "load": "shared",
                 "waitedSeconds": 0.0, "ranSeconds": 20.0}]
        with open(os.path.join(timing, "heavy.jsonl"), "w") as f:
            f.writelines(json.dumps(j) + "\n" for j in jobs)
        with open(os.path.join(timing, "scenarios", "chaos_chaos.py cut-2min.json"), "w") as f:
            json.dump({"job": "chaos/chaos.py cut-2min", "wallSeconds": 150.0, "phases": {"browser start": 1.0},
                       "cpuSeconds": 120.5}, f)
        with open(os.path.join(timing, "scenarios", "cluster_cluster.py failover.json"), "w") as f:
            json.dump({"job": "cluster/cluster.py failover", "wallSeconds": 20.0, "phases": {"PostgreSQL start": 12.0}}, f)

    def tearDown(self):
        shutil.rmtree(self.run, ignore_errors=True)

    def test_the_table_says_where_the_time_went(self):
        import timing
        t = timing.build(self.run)
        self.assertEqual(t["totalSeconds"], 1800.5, "from the first stage's start to the last end, overlapping stages once")
        self.assertEqual([s["stage"] for s in t["stages"]], ["install", "build", "fuzz", "swift test"])
        self.assertEqual(t["stages"][3]["exit"], 1)
        self.assertEqual((t["tests"], t["failedTests"]), (3, 1))
        names = [x["name"] for x in t["slowest"]]
        # A heavy job counts its run, not its wait for a slot; the test that wrapped it is not counted twice.
        self.assertEqual(names[0], "chaos/chaos.py cut-2min")
        self.assertEqual(t["slowest"][0]["seconds"], 150.0, "its run (150 s), not its run and its wait for a slot (400 s)")
        self.assertNotIn("DuetServerTests.BrowserChaosTests/cut()", names)
        # A suite's time is its heavy jobs' run (150 s), not its tests' xunit time (400 s, the wait included).
        chaos = next(x for x in t["suites"] if x["suite"] == "DuetServerTests.BrowserChaosTests")
        self.assertEqual((chaos["heavyJobs"], chaos["seconds"]), (1, 150.0))
        # In-process tests are counted, not ranked (their times include their wait for a place in flight).
        self.assertNotIn("DuetClientTests.CallEngineTests/a()", names)
        self.assertEqual((t["inProcessTests"], t["inProcessFailed"]), (2, 1))
        waits = {x["name"]: x["waitsOn"] for x in t["slowest"]}
        self.assertTrue(waits["chaos/chaos.py cut-2min"].startswith("the product's timers and events (99 %"))
        self.assertTrue(waits["cluster/cluster.py failover"].startswith("PostgreSQL start (60 %"))
        self.assertTrue(waits["sweepOfSeeds()"].startswith("CPU"))
        text = timing.markdown(t)
        self.assertIn("1,800 s (30.0 min)", text)
        self.assertIn("| swift test | 1,500 s | 25 % | 1 |", text, "the mean of the samples inside the stage")
        self.assertIn("| build | 290 s | 75 % | 0 |", text)
        self.assertIn("| install | 10 s | - | 0 |", text, "no sample inside: no figure")
        # The CPU a scenario used (with what it started) where it was measured; none for an in-process job.
        self.assertIn("| 1 | chaos/chaos.py cut-2min | 150.0 | 120.5 | shared |", text)
        self.assertIn("| sweepOfSeeds() | 30.0 | - | exclusive |", text)
        self.assertEqual([(s["script"], s["jobs"], s["cpuSeconds"]) for s in t["cpuByScript"]], [("chaos/chaos.py", 1, 120.5)])
        self.assertIn("| chaos/chaos.py | 1 | 120 | 150 s |", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
