#!/usr/bin/env bash
# bed.sh - `make bench`: heatsible instantiate-end against the sequential
# baseline (bench/baseline.sh) on the test bed, for N workers in BENCH_SIZES
# (default "2 8 16"), 1 storage server with BENCH_VOLUMES volumes (default 1),
# 1 master.
#
# For each N:
#   1. reshape the bed: WORKERS=N SPARE_WORKERS=0 EXTERNAL_LB=0 testbed/bin/bed up
#      (the Heat stack has exactly the N workers; no spare worker host, no LB
#      host: hosts that are not in the cluster would only add load), and check
#      that heatsible discovers N workers;
#   2. bench/reset.sh (volume blank, ganesha off, PVs gone, SSH masters closed;
#      see its header), then time bench/baseline.sh;
#   3. bench/reset.sh again, then time heatsible's first run, as the e2e tests
#      run it: `heatsible -o json -v run instantiate-end --request ...
#      --package ... --stack ... --known-hosts ...`, through the bed's
#      Ansible host; then its re-run (changed must be 0).
# Times are wall clock around the whole command (heatsible: Heat discovery,
# bundle upload, ansible-playbook, cleanup). The 1-minute load average is
# recorded before each measurement: figures taken while other jobs run are
# noisy, and results.md says so.
#
# Writes BENCH_OUT/results.md, results.csv and results.json (BENCH_OUT:
# bench/; results-fresh-clients.* with BENCH_PURGE_CLIENT=1, results-LABEL.*
# with BENCH_LABEL); logs in BENCH_LOGS (default /tmp/heatsible-bench-<time>).
# Knobs: BENCH_SIZES, BENCH_VOLUMES, BENCH_SKIP_BASELINE=1, BENCH_PURGE_CLIENT=1
# (bench/reset.sh), HEATSIBLE (the binary; default bin/heatsible, built if
# missing), BENCH_RUN_ARGS (extra heatsible run flags, e.g. "--forks 5"),
# BENCH_LABEL (a name for this series in the output).
# Asserts nothing about speed: the targets are in docs/performance.md and results.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT"
RUN=$ROOT/testbed/run
BED=$ROOT/testbed/bin/bed
SIZES=${BENCH_SIZES:-2 8 16}
VOLS=${BENCH_VOLUMES:-1}
OUT=${BENCH_OUT:-$ROOT/bench}
LOGS=${BENCH_LOGS:-/tmp/heatsible-bench-$(date +%Y%m%d-%H%M%S)}
HEATSIBLE=${HEATSIBLE:-$ROOT/bin/heatsible}
# results.* for the bed's hosts as they come (nfs-common installed), results-fresh-clients.*
# with BENCH_PURGE_CLIENT=1 (nfs-common purged on every master and worker before each first run)
if [ "${BENCH_PURGE_CLIENT:-0}" = 1 ]; then LABEL=${BENCH_LABEL:-fresh-clients}; else LABEL=${BENCH_LABEL:-default}; fi
SUFFIX=""; [ "$LABEL" = default ] || SUFFIX=-$LABEL
read -r -a EXTRA <<< "${BENCH_RUN_ARGS:-}"

[ "$(id -u)" = 0 ] || { echo "bench: run as root (the bed needs it)" >&2; exit 2; }
[ -s "$RUN/env" ] || { echo "bench: no test bed: run 'make testbed-up' first" >&2; exit 2; }
[ -x "$HEATSIBLE" ] || go build -trimpath -o "$HEATSIBLE" ./cmd/heatsible
mkdir -p "$LOGS" "$OUT"
echo "bench: logs in $LOGS" >&2

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
load() { cut -d' ' -f1 /proc/loadavg; }
log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# shellcheck disable=SC1091
bedenv() { set -a; . "$RUN/env"; set +a; mapfile -t OSENV < <(env | grep -E '^OS_[A-Z_]+='); }

# heatsible LOGNAME: one instantiate-end; prints "seconds changed failed unreachable exit"
heatsible_run() {
  local name=$1 t rc=0 state=$LOGS/state-$1   # the run record (run.log: every event, timed) stays with the logs
  mkdir -p "$state"
  t=$(now)
  env -i PATH="$PATH" HOME="$HOME" HEATSIBLE_STATE_DIR="$state" "${OSENV[@]}" \
    "$HEATSIBLE" -o json -v run instantiate-end --request "$RUN/request.json" --package "$RUN/package" \
    --stack "$HEATSIBLE_STACK" --known-hosts "$RUN/known_hosts" "${EXTRA[@]}" \
    > "$LOGS/$name.json" 2> "$LOGS/$name.log" || rc=$?
  local secs; secs=$(since "$t")
  jq -r --arg s "$secs" --arg rc "$rc" \
    '"\($s) \(.changed // -1) \([.recap[]?.failed] | add // 0) \([.recap[]?.unreachable] | add // 0) \($rc)"' \
    "$LOGS/$name.json" 2>/dev/null || echo "$secs -1 -1 -1 $rc"
}

# CPU seconds by part of the bed between cpu_mark and cpu_since NAME (bench/cpu.py) -> LOGS/cpu-NAME.json
cpu_mark() { bench/cpu.py snap "$LOGS/cpu0"; }
cpu_since() { bench/cpu.py snap "$LOGS/cpu1"; bench/cpu.py diff "$LOGS/cpu0" "$LOGS/cpu1" > "$LOGS/cpu-$1.json"; }

# what a page fault and an Ansible task cost on this machine (bench/machine.sh)
bench/machine.sh > "$LOGS/machine" 2>&1 || echo "bench: bench/machine.sh failed, see $LOGS/machine" >&2
log "machine: $(tr '\n' ' ' < "$LOGS/machine")"

rows=()
for N in $SIZES; do
  log "N=$N: reshaping the bed (WORKERS=$N SPARE_WORKERS=0 EXTERNAL_LB=0 VOLUMES=$VOLS)"
  t=$(now)
  WORKERS=$N SPARE_WORKERS=0 EXTERNAL_LB=0 VOLUMES=$VOLS "$BED" up > "$LOGS/bed-up-$N.log" 2>&1 ||
    { echo "bench: bed up failed, see $LOGS/bed-up-$N.log" >&2; tail -5 "$LOGS/bed-up-$N.log" >&2; exit 1; }
  log "N=$N: bed up in $(since "$t") s"
  bedenv
  # the stack must have exactly N workers: heatsible runs on what Heat says
  found=$(env -i PATH="$PATH" HOME="$HOME" "${OSENV[@]}" \
    "$HEATSIBLE" -o json topology --request "$RUN/request.json" --stack "$HEATSIBLE_STACK" |
    jq '[.nodes[] | select(.role == "worker")] | length')
  [ "$found" = "$N" ] || { echo "bench: Heat has $found workers, want $N" >&2; exit 1; }

  base_s="" base_load="" slowest=""
  if [ "${BENCH_SKIP_BASELINE:-0}" != 1 ]; then
    bench/reset.sh > "$LOGS/reset-base-$N.log" 2>&1
    base_load=$(load); cpu_mark; t=$(now)
    bench/baseline.sh > "$LOGS/baseline-$N.log" 2>&1 ||
      { echo "bench: the baseline failed at N=$N:" >&2; tail -20 "$LOGS/baseline-$N.log" >&2; exit 1; }
    base_s=$(since "$t")
    cpu_since "baseline-$N"
    slowest=$(awk '$1 == "host" && $3 > m {m = $3} END {print m}' "$LOGS/baseline-$N.log")
    log "N=$N: baseline $base_s s (slowest host $slowest s, load $base_load)"
  fi

  bench/reset.sh > "$LOGS/reset-hs-$N.log" 2>&1
  first_load=$(load)
  cpu_mark
  read -r first_s first_changed first_failed first_unr first_rc < <(heatsible_run "first-$N")
  cpu_since "first-$N"
  log "N=$N: heatsible first run $first_s s, changed $first_changed, exit $first_rc (load $first_load)"
  [ "$first_rc" = 0 ] || { echo "bench: heatsible's first run failed at N=$N, see $LOGS/first-$N.log" >&2; tail -20 "$LOGS/first-$N.log" >&2; exit 1; }
  re_load=$(load)
  cpu_mark
  read -r re_s re_changed re_failed re_unr re_rc < <(heatsible_run "rerun-$N")
  cpu_since "rerun-$N"
  log "N=$N: heatsible re-run $re_s s, changed $re_changed, exit $re_rc (load $re_load)"
  [ "$re_rc" = 0 ] || { echo "bench: heatsible's re-run failed at N=$N, see $LOGS/rerun-$N.log" >&2; exit 1; }
  rows+=("$N $first_s $first_changed $re_s $re_changed ${base_s:--} ${slowest:--} $first_load $re_load ${base_load:--} $((first_failed + first_unr + re_failed + re_unr))")
done

# ---------------------------------------------------------------- results
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=""
if [ -n "$(git status --porcelain --untracked-files=no -- . ':!bench/results*' 2>/dev/null)" ]; then dirty=" (work tree with uncommitted changes)"; fi
mem=$(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')
cpus=$(nproc)
when=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '%s\n' "${rows[@]}" > "$LOGS/rows"

python3 - "$LOGS/rows" "$OUT" "$LABEL" "$commit$dirty" "$cpus" "$mem" "$when" "$(uptime)" "$SUFFIX" "${BENCH_PURGE_CLIENT:-0}" "$LOGS/machine" <<'PY'
import csv, json, os, sys
rows_file, out, label, commit, cpus, mem, when, uptime, suffix, purge, machine_file = sys.argv[1:]
machine = {}
for line in open(machine_file):
    f = line.split()
    if len(f) == 2:
        try:
            machine[f[0]] = float(f[1])
        except ValueError:
            pass
def num(x):
    return None if x == "-" else float(x)
rows, cpu = [], {}
for line in open(rows_file):
    f = line.split()
    r = {"workers": int(f[0]), "heatsible_first_s": num(f[1]), "first_changed": int(f[2]),
         "heatsible_rerun_s": num(f[3]), "rerun_changed": int(f[4]), "baseline_s": num(f[5]),
         "baseline_slowest_host_s": num(f[6]), "load_first": num(f[7]), "load_rerun": num(f[8]),
         "load_baseline": num(f[9]), "failed_or_unreachable": int(f[10])}
    r["ratio_heatsible_baseline"] = round(r["heatsible_first_s"] / r["baseline_s"], 3) if r["baseline_s"] else None
    r["ratio_rerun_first"] = round(r["heatsible_rerun_s"] / r["heatsible_first_s"], 3)
    # CPU seconds by part of the bed (bench/cpu.py); "vms": the cluster's hosts
    for run in ("baseline", "first", "rerun"):
        p = os.path.join(os.path.dirname(rows_file), "cpu-%s-%d.json" % (run, r["workers"]))
        c = json.load(open(p)) if os.path.exists(p) else None
        cpu.setdefault(r["workers"], {})[run] = c
        r["cpu_%s_ansible" % run] = c and c["ansible"]
        r["cpu_%s_vms" % run] = c and round(c["storage"] + c["masters"] + c["workers"], 2)
        r["cpu_%s_machine" % run] = c and c["machine"]
        r["cpu_%s_total" % run] = c and c["total"]
    # the least wall time of any tool that does the baseline's work on the VMs, when the
    # VMs share this machine's cores: their CPU seconds over the core count
    r["floor_s"] = round(r["cpu_baseline_vms"] / int(cpus), 2) if r["cpu_baseline_vms"] else None
    r["floor_ratio"] = round(r["floor_s"] / r["baseline_s"], 3) if r["floor_s"] and r["baseline_s"] else None
    # what would be left, in CPU seconds, for everything that is not the VMs' own work (the
    # controller, its SSH clients, Heat discovery) to finish in 0.3 x the baseline on these cores
    r["budget_at_0_3_cpu_s"] = (round(max(0.0, (0.3 * r["baseline_s"] - r["floor_s"]) * int(cpus)), 2)
                                if r["floor_s"] and r["baseline_s"] else None)
    rows.append(r)
by = {r["workers"]: r for r in rows}
lo, hi = min(by), max(by)
growth = round(by[hi]["heatsible_first_s"] / by[lo]["heatsible_first_s"], 3) if hi != lo else None
bgrowth = (round(by[hi]["baseline_s"] / by[lo]["baseline_s"], 3)
           if hi != lo and by[hi]["baseline_s"] and by[lo]["baseline_s"] else None)
doc = {"label": label, "commit": commit, "date": when, "nproc": int(cpus), "memory": mem,
       "uptime_at_end": uptime.strip(), "rows": rows,
       "growth_first": {"from": lo, "to": hi, "heatsible": growth, "baseline": bgrowth}}
doc["nfs_common_purged_before_first_runs"] = purge == "1"
doc["machine"] = machine
doc["cpu_seconds"] = {str(k): v for k, v in cpu.items()}
json.dump(doc, open(os.path.join(out, "results%s.json" % suffix), "w"), indent=1)
with open(os.path.join(out, "results%s.csv" % suffix), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
fmt = lambda v, p="%.1f": "-" if v is None else p % v
lines = ["| N workers | heatsible first s (changed) | re-run s (changed) | baseline s | heatsible/baseline | re-run/first | baseline slowest host s | load 1m: first / re-run / baseline |",
         "|---|---|---|---|---|---|---|---|"]
for r in rows:
    lines.append("| %d | %s (%d) | %s (%d) | %s | %s | %s | %s | %s / %s / %s |" % (
        r["workers"], fmt(r["heatsible_first_s"]), r["first_changed"], fmt(r["heatsible_rerun_s"]), r["rerun_changed"],
        fmt(r["baseline_s"]), fmt(r["ratio_heatsible_baseline"], "%.2f"), fmt(r["ratio_rerun_first"], "%.2f"),
        fmt(r["baseline_slowest_host_s"]), fmt(r["load_first"]), fmt(r["load_rerun"]), fmt(r["load_baseline"])))
table = "\n".join(lines)
# where the CPU went, and the floor it sets on this machine
cl = ["| N workers | baseline CPU s: VMs / Ansible host / this machine / all | heatsible first run: VMs / Ansible host / this machine / all | re-run: all | floor s = baseline's VM CPU / %s cores | floor / baseline | CPU s left at 0.3 x baseline |" % cpus,
      "|---|---|---|---|---|---|---|"]
for r in rows:
    cl.append("| %d | %s / %s / %s / %s | %s / %s / %s / %s | %s | %s | %s | %s |" % (
        r["workers"], fmt(r["cpu_baseline_vms"]), fmt(r["cpu_baseline_ansible"]), fmt(r["cpu_baseline_machine"]),
        fmt(r["cpu_baseline_total"]), fmt(r["cpu_first_vms"]), fmt(r["cpu_first_ansible"]), fmt(r["cpu_first_machine"]),
        fmt(r["cpu_first_total"]), fmt(r["cpu_rerun_total"]), fmt(r["floor_s"]), fmt(r["floor_ratio"], "%.2f"),
        fmt(r["budget_at_0_3_cpu_s"])))
cpu_table = "\n".join(cl)
# bench/cpu.py's sum against the machine's own busy time (/proc/stat): what it missed
cover = sorted((c["total"] / c["proc_stat"], "%s at N=%d" % (run, n))
               for n, v in cpu.items() for run, c in v.items() if c and c.get("proc_stat"))
cover_line = ("Accounting check: the groups add up to %.0f-%.0f %% of the machine's busy time in /proc/stat "
              "(lowest: %s; bench/cpu.py says what it can miss)." %
              (100 * cover[0][0], 100 * cover[-1][0], cover[0][1])) if cover else ""
g = ("growth of the first run from %d to %d workers: heatsible %sx, baseline %sx" %
     (lo, hi, fmt(growth, "%.2f"), fmt(bgrowth, "%.2f"))) if growth else "(one size only: no growth figure)"
print(table)
print(g)
scenario = ("nfs-common purged on every master and worker before each first run (BENCH_PURGE_CLIENT=1): "
            "both sides install it (from the bed's apt proxy cache; the apt index declared fresh, no apt-get update)"
            if purge == "1" else
            "the bed's hosts as they come: nfs-common and the NFS server packages installed, nothing for apt to do; "
            "BENCH_PURGE_CLIENT=1 gives the same with nfs-common to install (results-fresh-clients.md)")
md = ["# make bench: results%s" % ((" (" + label + ")") if suffix else ""), "",
      "Machine: %s cores (nproc), %s (free -g); %s; commit %s; series \"%s\"." % (cpus, mem, when, commit, label), "",
      "Scenario: " + scenario + ".", "",
      "Shared machine: other jobs (builds, tests of other sessions) may have run at the same time; the 1-minute",
      "load average before each measurement is in the last column. On 2 cores, everything (the Ansible host,",
      "every bed host, Kubernetes, Heat) competes for the same CPUs. Single runs, wall clock.", "",
      ("This machine (bench/machine.sh): a page fault costs %s us (on bare metal typically well under 1 us; not measured here); an Ansible task "
       "that does nothing costs the controller %s s; ansible-playbook's start with one task %s s. Ansible forks a "
       "worker per task and host, and each writes tens of MiB, so its per-task cost here is far above a usual "
       "Ansible host's, while the baseline's shell and ssh touch little memory." % (
           fmt(machine.get("page_fault_us"), "%.1f"), fmt(machine.get("ansible_task_s"), "%.3f"),
           fmt(machine.get("ansible_start_s"), "%.2f"))), "",
      table, "", g + ".", "",
      "Targets (measured, never asserted): at N=8 heatsible <= 0.3 x baseline; growth 2->16 <= 1.3x;",
      "re-run <= 0.5 x first with 0 changed. \"baseline slowest host\" is the longest single host session of",
      "the baseline (that host's own work plus one SSH login), a rough floor for any parallel tool when",
      "every VM has CPUs of its own.", "",
      "## Where the CPU went",
      "",
      "CPU seconds used during each measurement, by part of the bed (bench/cpu.py: user+system time of",
      "every process, by the bed host whose cgroup it is in). VMs: the storage server, the master and the",
      "workers. Ansible host: Ansible and its SSH clients (the baseline does not use it). This machine: the",
      "rest - heatsible itself, Heat, Keystone, the Kubernetes control plane, and the baseline's own ssh,",
      "sshpass and scripts.", "",
      cpu_table, "", cover_line, "",
      "Here the VMs have no CPUs of their own: they share this machine's %s cores with the Ansible host and" % cpus,
      "everything else. So no tool that does the baseline's work on the VMs, however parallel, can finish in",
      "less than the VMs' CPU seconds divided by %s (the floor column). The last column is what would be" % cpus,
      "left, with both cores busy all the time, for everything that is not the VMs' own work (the",
      "controller, its SSH clients, Heat discovery) if a tool were to finish in 0.3 x the baseline:",
      "compare it with ansible-playbook's start alone, %s s here (bench/machine.sh). On a cloud, where each" % fmt(machine.get("ansible_start_s"), "%.2f"),
      "VM has its own CPUs, the floor is the slowest host's own work instead.", "",
      "How: bench/bed.sh (make bench); baseline bench/baseline.sh; reset between first runs bench/reset.sh.",
      "Raw: results%s.csv, results%s.json." % (suffix, suffix)]
open(os.path.join(out, "results%s.md" % suffix), "w").write("\n".join(md) + "\n")
PY
log "written: $OUT/results$SUFFIX.md, results$SUFFIX.csv, results$SUFFIX.json"
