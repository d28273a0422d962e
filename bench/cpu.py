#!/usr/bin/env python3
"""cpu.py - CPU seconds spent by each part of the test bed, for bench/bed.sh.

  cpu.py snap FILE     write a snapshot (JSON) of the CPU used so far
  cpu.py diff A B      print, as JSON, the CPU used between two snapshots,
                       by group: "ansible" (the bed's Ansible host: Ansible's
                       processes, its SSH clients, heatsible's session),
                       "storage", "masters", "workers" (the cluster's VMs),
                       "other_hosts" (any other bed host) and "machine"
                       (everything else on this machine: heatsible itself,
                       Heat, Keystone, the Kubernetes control plane, the
                       baseline's ssh and scripts), "total", and "proc_stat"
                       (the machine's busy time from /proc/stat, a check)

The bed's hosts share this machine's cores: there is no per-VM CPU, so what a
host used is read from /proc. A process's figure is its own user+system time
plus that of the children it has reaped (utime, stime, cutime, cstime in
/proc/PID/stat); summed over the live processes, this counts the work of
processes that have exited as well, because every exited process has been
reaped by a live one (its parent, or the host's init). The host a process
belongs to is its cgroup: testbed/bin/bed puts each host in "hs-NAME".
Not exact: a process reaped by a parent that ignores SIGCHLD adds nothing, and
one that exited before the first snapshot but was reaped after it counts in
full: compare "total" with "proc_stat".
"""
import json
import os
import re
import sys

CG = re.compile(r":/hs-([^/\n]+)")


def group(host):
    if host is None:
        return "machine"
    if host == "ansible":
        return "ansible"
    if host == "storage":
        return "storage"
    if host.startswith("master-"):
        return "masters"
    if host.startswith("worker-"):
        return "workers"
    return "other_hosts"


def snap():
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % pid) as f:
                cg = f.read()
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
        except OSError:  # gone meanwhile: its parent has its time now
            continue
        m = CG.search(cg)
        fields = st[st.rindex(")") + 2:].split()  # after "pid (comm) "
        secs = sum(int(x) for x in fields[11:15]) / hz  # utime stime cutime cstime
        g = group(m.group(1) if m else None)
        out[g] = out.get(g, 0.0) + secs
    with open("/proc/stat") as f:  # the machine's own count, as a check
        cpu = f.readline().split()  # cpu user nice system idle iowait irq softirq steal
    out["proc_stat"] = sum(int(x) for x in cpu[1:4] + cpu[6:9]) / hz
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "snap":
        with open(argv[2], "w") as f:
            json.dump(snap(), f)
        return 0
    if len(argv) == 4 and argv[1] == "diff":
        with open(argv[2]) as f:
            a = json.load(f)
        with open(argv[3]) as f:
            b = json.load(f)
        groups = ["ansible", "storage", "masters", "workers", "other_hosts", "machine"]
        d = {g: round(max(b.get(g, 0.0) - a.get(g, 0.0), 0.0), 2) for g in groups}
        d["total"] = round(sum(d[g] for g in groups), 2)
        d["proc_stat"] = round(b["proc_stat"] - a["proc_stat"], 2)
        print(json.dumps(d))
        return 0
    print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
