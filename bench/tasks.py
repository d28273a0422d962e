#!/usr/bin/env python3
"""tasks.py RUN.LOG [TOP] - where a heatsible run's time went, from its run
record (STATE/runs/CLUSTER/TIME-OP/run.log, every event timed).

Prints the phases (before the first play: Heat, bundle, upload, Ansible's
start; each play; after the last result: Ansible's end, cleanup) and the TOP
(default 15) longest tasks: from the task's start to its last host's result,
with the number of hosts, their results, and how many hosts ran the module
(status other than skipped)."""
import json
import sys
from datetime import datetime


def ts(s):
    # 2026-11-22T12:27:21.941990238Z -> datetime (microseconds)
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".")
        s = head + "." + frac[:6]
    return datetime.fromisoformat(s)


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    ev = [json.loads(line) for line in open(path) if line.strip()]
    timed = [e for e in ev if "time" in e]
    t0 = ts(timed[0]["time"])
    end = ts(timed[-1]["time"])
    plays, tasks, order = [], {}, []
    for e in timed:
        k = e["kind"]
        t = ts(e["time"])
        if k == "play_start":
            plays.append([e["play"], t, t])
        elif k == "task_start":
            key = (e.get("play"), e["task"])
            if key not in tasks:
                tasks[key] = {"start": t, "end": t, "hosts": {}}
                order.append(key)
        elif k == "result":
            key = (e.get("play"), e["task"])
            d = tasks.setdefault(key, {"start": t, "end": t, "hosts": {}})
            if key not in order:
                order.append(key)
            d["end"] = max(d["end"], t)
            d["hosts"][e["host"]] = e.get("status", "?")
        if plays and k in ("result", "task_start"):
            plays[-1][2] = t
    first_play = plays[0][1] if plays else end
    print("total %.1f s (first event to last)" % (end - t0).total_seconds())
    print("  %-60s %6.1f s" % ("before the first play (Heat, bundle, upload, ansible start)", (first_play - t0).total_seconds()))
    for name, s, e in plays:
        print("  %-60s %6.1f s" % ("play: " + name[:54], (e - s).total_seconds()))
    if plays:
        print("  %-60s %6.1f s" % ("after the last task (ansible end, cleanup)", (end - plays[-1][2]).total_seconds()))
    rows = []
    for key in order:
        d = tasks[key]
        ran = sum(1 for st in d["hosts"].values() if st != "skipped")
        rows.append(((d["end"] - d["start"]).total_seconds(), key[1], len(d["hosts"]), ran))
    print("tasks: %d, results: %d, module runs (not skipped): %d" % (
        len(rows), sum(r[2] for r in rows), sum(r[3] for r in rows)))
    print("longest tasks (start to last host's result):")
    for secs, name, hosts, ran in sorted(rows, reverse=True)[:top]:
        print("  %6.2f s  %2d hosts, %2d ran  %s" % (secs, hosts, ran, name[:90]))


if __name__ == "__main__":
    main()
