"""The chaos results: docs/chaos-results.json (one entry per scenario, the latest run) and the table in
docs/resilience.md between its chaos markers, rewritten from it after every scenario."""
import datetime
import fcntl
import json
import os
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
JSON_PATH = os.path.join(ROOT, "docs", "chaos-results.json")
DOC_PATH = os.path.join(ROOT, "docs", "resilience.md")
BEGIN, END = "<!-- chaos-table:begin -->", "<!-- chaos-table:end -->"
ORDER = ["cut-2s", "cut-10s", "cut-2min", "signaling-cut", "media-cut", "server-kill", "ws-refused", "rtt-loss", "turn-expiry"]


def record(result):
    with open(os.path.join(tempfile.gettempdir(), "duet-chaos-results.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(JSON_PATH) as f:
                entries = json.load(f)
        except (OSError, ValueError):
            entries = {}
        entries[result["scenario"]] = {**result, "date": datetime.date.today().isoformat()}
        with open(JSON_PATH, "w") as f:
            json.dump(entries, f, indent=2, sort_keys=True)
            f.write("\n")
        render(entries)


def render(entries):
    rows = ["| Scenario | Recovered? | Time to recover | What recovered it | Run |", "|---|---|---|---|---|"]
    for key in sorted(entries, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER)):
        e = entries[key]
        rows.append(f"| {e['title']} | {'yes' if e['recovered'] else '**no**'} | {e['seconds']} s | {e['how']} | {e['date']} |")
    with open(DOC_PATH) as f:
        doc = f.read()
    if BEGIN not in doc:
        return
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1] if END in rest else ""
    with open(DOC_PATH, "w") as f:
        f.write(head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail)
