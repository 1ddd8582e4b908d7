"""The soak's report (docs/benchmarks.md, "Soak"; issue 34, point 3), from one `duet-bench soak` run's output.

    python3 benchmarks/soak.py LOG RUN_ID      (benchmarks/soak.sh runs it)
    python3 benchmarks/soak.py --render        (the section again from docs/benchmarks-soak.json)

Reads the run's `SAMPLE {json}` lines and its `BENCH {json}` result (the series, the growth duet-bench computed,
the tables once idle). Writes docs/benchmarks-soak.json, the plot docs/soak.png and the section between the soak
markers of docs/benchmarks.md. A run that ended without its result is recorded too, as failed, with the samples it
left. Targets: after the warm-up, each judged series grows ≤ 2 % (last third of the churn against its first third),
no client error, and every table of connections, seats and rooms empty once the clients have gone.
Exits non-zero when a target is missed.
"""
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
JSON_PATH = os.path.join(ROOT, "docs", "benchmarks-soak.json")
PNG_PATH = os.path.join(ROOT, "docs", "soak.png")
MD_PATH = os.path.join(ROOT, "docs", "benchmarks.md")
BEGIN, END = "<!-- soak:begin -->", "<!-- soak:end -->"
GROWTH_TARGET = 2.0


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True).stdout.strip()


def machine():
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True,
                         text=True).stdout.strip()
    return f"{os.cpu_count()} cores ({cpu})"


def read(log, run_id):
    samples, result = [], None
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("SAMPLE "):
                samples.append(json.loads(line[len("SAMPLE "):]))
            elif line.startswith("BENCH "):
                result = json.loads(line[len("BENCH "):])
    record = {
        "runId": run_id, "commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
        "completed": result is not None, "result": result or {"samples": samples},
    }
    return record


def verdict(record):
    """What was missed (an empty list: every target met)."""
    if not record["completed"]:
        return ["the run ended without its result (see the log)"]
    r = record["result"]
    missed = []
    for name, g in sorted(r["growth"].items()):
        if g["percent"] > GROWTH_TARGET:
            missed.append(f"{name} grew {g['percent']:.1f} %")
    if not r["growth"]:
        missed.append("too few samples after the warm-up to judge growth")
    if r["errors"]:
        missed.append(f"{sum(r['errors'].values())} client errors")
    if r["leftOnceIdle"]:
        missed.append("tables not empty once idle (-1: not reported): " + ", ".join(f"{t} {v:g}" for t, v in sorted(r["leftOnceIdle"].items())))
    for series in ("rooms", "participants", "connections"):
        if r["settled"][series] != 0:
            missed.append(f"{series} {r['settled'][series]:g} once idle")
    return missed


def plot(record):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    r = record["result"]
    s = r["samples"]
    t = [x["t"] / 60 for x in s]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [
        (axes[0][0], "memory (MiB)", [("RSS", [x["rssKiB"] / 1024 for x in s]), ("heap in use", [x["heapKiB"] / 1024 for x in s])]),
        (axes[0][1], "open", [("file descriptors", [x["fds"] for x in s]), ("connections", [x["connections"] for x in s])]),
        (axes[1][0], "held", [("rooms", [x["rooms"] for x in s]), ("participants", [x["participants"] for x in s])]),
        (axes[1][1], "store (KiB)", [("SQLite + WAL", [x["storeKiB"] for x in s]),
                                     ("of which WAL", [x.get("walKiB", 0) for x in s])]),
    ]
    for ax, title, lines in panels:
        for label, values in lines:
            ax.plot(t, values, label=label)
        if r.get("warmupSeconds"):
            ax.axvline(r["warmupSeconds"] / 60, color="grey", linestyle=":", linewidth=1)
        ax.set_title(title)
        ax.set_ylim(bottom=0)
        ax.legend(loc="lower right")
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("minutes (dotted: end of warm-up)")
    fig.suptitle(f"duet serve under call churn, {r.get('clients', '?')} clients (run {record['runId']}, {record['commit'][:7]})")
    fig.tight_layout()
    fig.savefig(PNG_PATH, dpi=80)
    plt.close(fig)


def section(record, missed):
    r = record["result"]
    head = (f"Run `{record['runId']}` on {record['date'][:10]}, commit `{record['commit'][:7]}`"
            f"{', dirty tree' if record['dirty'] else ''}, {record['machine']}; `benchmarks/soak.sh`.")
    if not record["completed"]:
        return "\n".join([BEGIN, "## Soak", "", head, "", f"**Failed:** {missed[0]}; {len(r['samples'])} samples recorded.", END])
    g = r["growth"]
    rows = [f"| {name} | {v['first']:,.1f} | {v['last']:,.1f} | {v['percent']:+.1f} % | {'met' if v['percent'] <= GROWTH_TARGET else '**missed**'} |"
            for name, v in sorted(g.items())]
    idle = r["settled"]
    tables = ", ".join(f"{t} {idle['tables'].get(t, -1):g}" for t in r["checkedOnceIdle"])
    bounded = ", ".join(f"{t} {v:g}" for t, v in sorted(idle["tables"].items()) if t not in r["checkedOnceIdle"])
    outcomes = ", ".join(f"{v:,} {k}" for k, v in sorted(r["outcomes"].items()))
    errors = ", ".join(f"{v:,} {k}" for k, v in sorted(r["errors"].items())) or "none"
    return "\n".join([
        BEGIN,
        "## Soak",
        "",
        head + f" Call-shaped churn on one node: {r['clients']:,} clients (two per call slot; one guest in four on SSE) for "
        f"{r['churnSeconds'] / 60:.0f} min, {r['calls']:,} calls ({outcomes}); join p50 / p99 {r['joinMs']['p50']:.1f} / "
        f"{r['joinMs']['p99']:.1f} ms. Client errors: {errors}. Sampled every {r['samples'][1]['t'] - r['samples'][0]['t']:.0f} s; "
        f"growth is the mean of the churn's last third of samples against its first third, after a warm-up of "
        f"{r['warmupSeconds'] / 60:.0f} min. Target: ≤ {GROWTH_TARGET:g} % each, no client error, and once every "
        f"client has gone and the eviction timeout ({r['evictionSeconds']} s) has passed, every table of connections, seats "
        "and rooms empty. The `table:` rows are the tables bounded by a lifetime, judged at their plateau: the reconnect "
        f"token's lifetime (which bounds the revoked seats) was {r.get('tokenTtlSeconds', 1200)} s for this run "
        f"(`--reconnect-token-ttl`), under the warm-up; the ended seats' memory was {r.get('endedSeatMemorySeconds', 3600)} s "
        "(`--ended-seat-memory`, an hour by default: a run that leaves it at an hour sees that table grow all run long); "
        "tombstones live 300 s, ring memory 5 minutes, and a join-alert "
        "budget is dropped once refilled (90 s). Each table is summed over the hub's shards, and every shard keeps each "
        "seat that left (a shard hears what the others write: a room moved to it must still refuse the seat), so one seat "
        "left is one entry per shard.",
        "",
        "| series | first third | last third | growth | target |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Once idle ({idle['t'] / 60:.1f} min after the start): {idle['rooms']:g} rooms, {idle['participants']:g} participants, "
        f"{idle['connections']:g} connections, RSS {idle['rssKiB'] / 1024:.1f} MiB, heap {idle['heapKiB'] / 1024:.1f} MiB "
        f"(before the first client: RSS {r['idleBefore']['rssKiB'] / 1024:.1f}, heap {r['idleBefore']['heapKiB'] / 1024:.1f}). "
        f"Tables that must be empty: {tables}. Tables bounded by a lifetime or a capacity: {bounded}.",
        "",
        "**Every target met.**" if not missed else "**Missed:** " + "; ".join(missed) + ".",
        "",
        "![The soak: memory, descriptors, rooms and the store over the run](soak.png)",
        END,
    ])


def write_section(text):
    doc = open(MD_PATH).read() if os.path.exists(MD_PATH) else "# Benchmarks\n"
    if BEGIN in doc and END in doc:
        doc = doc.split(BEGIN, 1)[0] + text + doc.split(END, 1)[1]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    with open(MD_PATH, "w") as f:
        f.write(doc)


def main():
    if sys.argv[1:] == ["--render"]:
        record = json.load(open(JSON_PATH))
    else:
        record = read(sys.argv[1], sys.argv[2])
        with open(JSON_PATH, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
    missed = verdict(record)
    if record["result"].get("samples"):
        plot(record)
    write_section(section(record, missed))
    print("wrote docs/benchmarks-soak.json, docs/soak.png and the Soak section of docs/benchmarks.md")
    for line in missed:
        print("MISSED", line)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
