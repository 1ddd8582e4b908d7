"""Where a test run's time went: the timing table of one run of scripts/test.sh (issue 50).

    python3 scripts/timing.py .build/results/<run-id>            writes timing/timing.md and timing/timing.json, prints
                                                                  the total, the stages and the 10 slowest
    python3 scripts/timing.py .build/results/<run-id> --markdown  prints the table (what docs/testing.md quotes)
    python3 scripts/timing.py --sample-cpu FILE PID                 appends the machine's CPU use every 5 s to FILE
                                                                  until process PID (the run) ends

It reads what the run wrote as it went, measured where it happened:
  timing/stages.tsv          scripts/test.sh: each stage (install, format, build, swift test, differential, fuzz) with its
                             wall time and exit status
  timing/xunit*.xml          `swift test --xunit-output`: every test's time (for a heavy job this includes its wait for
                             a slot: the jobs table has the wait apart)
  timing/heavy.jsonl         OneAtATime (Sources/DuetTestBasics): every heavy job's wait for a slot and its run
  timing/cpu.tsv             this script's --sample-cpu: the share of all cores busy in each 5 s (how much of a
                             stage is waiting rather than computing)
  timing/scenarios/*.json    Tests/e2e/phase_timing.py: each e2e process's wall time and its measured set-up phases
                             (browser start, duet serve start, PostgreSQL start, namespace set-up)
What a job mostly waits on is the largest of its measured phases and the rest of its time; the rest is the
scenario's waits on the product's timers and events (or, for a job that computes, its CPU).
"""
import glob
import json
import os
import sys
import xml.etree.ElementTree as ET

COMPUTING = ("Sweep", "sweep", "Soak", "soak", "Bench", "bench", "Load", "Storm", "storm", "Simulation")


def read_stages(timing):
    stages = []
    path = os.path.join(timing, "stages.tsv")
    if os.path.exists(path):
        for line in open(path):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 4:
                name, start, end, rc = parts
                stages.append({"stage": name, "seconds": round(float(end) - float(start), 1), "exit": int(rc),
                               "start": float(start), "end": float(end)})
    return stages


def cpu_times():
    """(busy, total) jiffies of all cores from /proc/stat; iowait counts as idle."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def sample_cpu(path, pid, every=5.0):
    import time
    last = cpu_times()
    while True:
        time.sleep(every)
        try:
            os.kill(pid, 0)
        except OSError:
            return
        now = cpu_times()
        busy, total = now[0] - last[0], now[1] - last[1]
        last = now
        with open(path, "a") as f:
            f.write(f"{time.time():.1f}\t{busy / total if total else 0:.3f}\n")


def read_cpu(timing):
    samples = []
    path = os.path.join(timing, "cpu.tsv")
    if os.path.exists(path):
        for line in open(path):
            try:
                at, busy = line.split("\t")
                samples.append((float(at), float(busy)))
            except ValueError:
                pass
    return samples


def mean_busy(cpu, start, end):
    """The mean share of all cores busy in the samples taken between start and end (None without one)."""
    inside = [busy for at, busy in cpu if start < at <= end]
    return round(sum(inside) / len(inside), 2) if inside else None


def iso_seconds(text):
    import datetime
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def read_tests(timing):
    tests = []
    for path in sorted(glob.glob(os.path.join(timing, "xunit*.xml"))):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            tests.append({"suite": case.get("classname", "?"), "test": case.get("name", "?"),
                          "seconds": float(case.get("time", "0") or 0), "failed": failed, "skipped": skipped})
    return tests


def read_jobs(timing):
    jobs = []
    path = os.path.join(timing, "heavy.jsonl")
    if os.path.exists(path):
        for line in open(path):
            try:
                jobs.append(json.loads(line))
            except ValueError:
                pass
    phases = {}
    for path in glob.glob(os.path.join(timing, "scenarios", "*.json")):
        try:
            body = json.load(open(path))
            phases[body["job"]] = body
        except (ValueError, KeyError, OSError):
            pass
    for job in jobs:
        measured = phases.get(job["label"])
        job["phases"] = measured["phases"] if measured else {}
        job["cpuSeconds"] = measured.get("cpuSeconds") if measured else None
        job["waitsOn"] = waits_on(job, job["phases"])
    return jobs


def waits_on(job, phases):
    ran = job.get("ranSeconds", 0)
    if job.get("load") == "exclusive" and not phases:
        return "CPU (it computes: seeds, load, churn)" if any(k in job["label"] + job.get("file", "") for k in COMPUTING) \
            else "its own processes (one at a time)"
    rest = ran - sum(phases.values())
    kind, seconds = max([("the product's timers and events", rest)] + list(phases.items()), key=lambda kv: kv[1])
    share = f"{100 * seconds / ran:.0f} %" if ran > 0 else "-"
    return f"{kind} ({share})"


def build(run_dir):
    timing = os.path.join(run_dir, "timing")
    stages, tests, jobs = read_stages(timing), read_tests(timing), read_jobs(timing)
    cpu = read_cpu(timing)
    for stage in stages:
        stage["cpuBusy"] = mean_busy(cpu, stage["start"], stage["end"])
    for job in jobs:
        if "startedAt" in job:
            start = iso_seconds(job["startedAt"])
            job["cpuBusy"] = mean_busy(cpu, start, start + job["ranSeconds"])
    run = {}
    if os.path.exists(os.path.join(run_dir, "run.json")):
        with open(os.path.join(run_dir, "run.json")) as f:
            run = json.load(f)
    # Stages may overlap (the differential replay and the fuzz smoke run beside swift test): first start to last end.
    total = round(max(s["end"] for s in stages) - min(s["start"] for s in stages), 1) if stages else None
    # Per suite: its tests, failures, and the run time of the heavy jobs filed under its file (a test's own xunit time
    # includes its waits: for a slot, for a place in flight).
    suites = {}
    for t in tests:
        s = suites.setdefault(t["suite"], {"suite": t["suite"], "tests": 0, "failed": 0, "heavyJobs": 0, "seconds": 0.0})
        s["tests"] += 1
        s["failed"] += t["failed"]
    by_file = {}
    for j in jobs:
        name = os.path.basename(j.get("file", "")).removesuffix(".swift")
        by_file.setdefault(name, []).append(j["ranSeconds"])
    for s in suites.values():
        runs = by_file.get(s["suite"].split(".")[-1], [])
        s["heavyJobs"], s["seconds"] = len(runs), round(sum(runs), 1)
    # The slowest: heavy jobs by their run (not their wait for a slot). In-process tests are not ranked: Swift Testing
    # counts a test's time from its start, which comes before its wait for a place among the tests in flight
    # (scripts/test.sh), so their xunit times are mostly that wait.
    slow = [{"name": j["label"], "seconds": j["ranSeconds"], "waitsOn": j["waitsOn"], "load": j["load"],
             "cpuBusy": j.get("cpuBusy"), "cpuSeconds": j.get("cpuSeconds")} for j in jobs]
    heavy_files = {os.path.basename(j.get("file", "")).removesuffix(".swift") for j in jobs}
    in_process = [t for t in tests if t["suite"].split(".")[-1] not in heavy_files]
    heaviest = sorted((x for x in slow if x["cpuSeconds"] is not None), key=lambda x: -x["cpuSeconds"])
    # CPU-seconds per e2e script: on 2 busy cores, what a family of scenarios costs the rest of the run.
    by_script = {}
    for x in heaviest:
        script = by_script.setdefault(x["name"].split(" ")[0], {"script": x["name"].split(" ")[0], "jobs": 0, "cpuSeconds": 0.0,
                                                                "seconds": 0.0})
        script["jobs"] += 1
        script["cpuSeconds"] = round(script["cpuSeconds"] + x["cpuSeconds"], 1)
        script["seconds"] = round(script["seconds"] + x["seconds"], 1)
    slow.sort(key=lambda x: -x["seconds"])
    return {"runId": run.get("runId", os.path.basename(run_dir.rstrip("/"))), "commit": run.get("commit"),
            "dirty": run.get("dirty"), "arguments": run.get("arguments"), "exitStatus": run.get("exitStatus"),
            "totalSeconds": total, "stages": stages, "tests": len(tests), "failedTests": sum(t["failed"] for t in tests),
            "heavyJobs": len(jobs), "heavyRunSeconds": round(sum(j["ranSeconds"] for j in jobs), 1),
            "inProcessTests": len(in_process), "inProcessFailed": sum(t["failed"] for t in in_process),
            "suites": sorted(suites.values(), key=lambda s: (-s["seconds"], -s["tests"])), "slowest": slow[:25], "jobs": jobs,
            "heaviestByCpu": heaviest[:15], "cpuByScript": sorted(by_script.values(), key=lambda s: -s["cpuSeconds"])}


def minutes(seconds):
    return "-" if seconds is None else f"{seconds:,.0f} s ({seconds / 60:.1f} min)"


def cpu_text(seconds):
    return "-" if seconds is None else f"{seconds:,.1f}"


def percent(share):
    return "-" if share is None else f"{100 * share:.0f} %"


def markdown(t):
    out = [f"Run `{t['runId']}` on commit `{(t['commit'] or '?')[:10]}`{' (dirty)' if t['dirty'] else ''}, tier "
           f"`{(t['arguments'] or ['default'])[0]}`, exit status {t['exitStatus']}: **{minutes(t['totalSeconds'])}** in all; "
           f"{t['tests']} tests ({t['failedTests']} failed), {t['heavyJobs']} heavy jobs running {t['heavyRunSeconds']:,.0f} s.",
           "", "| stage | wall time | cores busy | exit |", "|---|---:|---:|---:|"]
    out += [f"| {s['stage']} | {s['seconds']:,.0f} s | {percent(s.get('cpuBusy'))} | {s['exit']} |" for s in t["stages"]]
    out += ["", "| suite | tests | failed | heavy jobs | their run time |", "|---|---:|---:|---:|---:|"]
    out += [f"| {s['suite']} | {s['tests']} | {s['failed']} | {s['heavyJobs']} | "
            f"{(format(s['seconds'], ',.0f') + ' s') if s['heavyJobs'] else '-'} |" for s in t["suites"]]
    out += ["", f"The 25 slowest heavy jobs (by their run, without their wait for a slot). The {t['inProcessTests']} "
            f"in-process tests ({t['inProcessFailed']} failed) are not ranked: their times include their wait for a place "
            "among the tests in flight.", "",
            "| # | test or job | seconds | CPU-seconds | slot | mostly waits on | cores busy meanwhile |",
            "|---:|---|---:|---:|---|---|---:|"]
    out += [f"| {i} | {x['name']} | {x['seconds']:,.1f} | {cpu_text(x.get('cpuSeconds'))} | {x['load']} | {x['waitsOn']} | "
            f"{percent(x['cpuBusy'])} |" for i, x in enumerate(t["slowest"], 1)]
    if t.get("cpuByScript"):
        total = sum(s["cpuSeconds"] for s in t["cpuByScript"])
        out += ["", f"CPU-seconds of the e2e scenarios (each with every process it started; {total:,.0f} in all), by script "
                "and the 15 heaviest. The in-process jobs (seed sweeps, the soak in little) are not measured this way.", "",
                "| script | jobs | CPU-seconds | their run time |", "|---|---:|---:|---:|"]
        out += [f"| {s['script']} | {s['jobs']} | {s['cpuSeconds']:,.0f} | {s['seconds']:,.0f} s |" for s in t["cpuByScript"]]
        out += ["", "| # | job | CPU-seconds | seconds |", "|---:|---|---:|---:|"]
        out += [f"| {i} | {x['name']} | {x['cpuSeconds']:,.1f} | {x['seconds']:,.1f} |" for i, x in enumerate(t["heaviestByCpu"], 1)]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) == 4 and argv[1] == "--sample-cpu":
        sample_cpu(argv[2], int(argv[3]))
        return
    if len(argv) < 2:
        sys.exit("usage: scripts/timing.py .build/results/<run-id> [--markdown] | --sample-cpu FILE PID")
    t = build(argv[1])
    text = markdown(t)
    if "--markdown" in argv:
        print(text, end="")
        return
    timing = os.path.join(argv[1], "timing")
    os.makedirs(timing, exist_ok=True)
    with open(os.path.join(timing, "timing.json"), "w") as f:
        json.dump(t, f, indent=1)
    with open(os.path.join(timing, "timing.md"), "w") as f:
        f.write(text)
    print(f"\n== timing of run {t['runId']}: {minutes(t['totalSeconds'])} in all ==")
    for s in t["stages"]:
        print(f"   {s['stage']:<14} {s['seconds']:>8,.0f} s  exit {s['exit']}  cores busy {percent(s.get('cpuBusy'))}")
    print("   the 10 slowest heavy jobs:")
    for x in t["slowest"][:10]:
        print(f"   {x['seconds']:>8,.1f} s  {x['name']}  — {x['waitsOn']}")
    print(f"   table: {os.path.relpath(os.path.join(timing, 'timing.md'))} (budget: 35 min default tier, 5 min --quick)")


if __name__ == "__main__":
    main(sys.argv)
