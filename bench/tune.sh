#!/usr/bin/env bash
# tune.sh - what each Ansible setting buys: heatsible instantiate-end on the
# test bed (first run on a reset bed, then the re-run) with one setting turned
# back at a time, against the tree as committed.
#
#   bench/tune.sh build [VARIANT]  build one binary per variant (no bed needed)
#   bench/tune.sh run [VARIANT]  time them on the bed (take it first; see
#                                docs/testbed.md), N = TUNE_WORKERS (8) workers
#   bench/tune.sh list           the variants
#
# Each variant is the committed tree (git archive HEAD) with one change, built
# into $TUNE_DIR/<variant>/heatsible (the roles and playbooks are embedded, so
# role and template variants are binaries too). `run` calls bench/bed.sh with
# BENCH_SKIP_BASELINE=1 for each, TUNE_REPEAT times (default 1), interleaved,
# and appends one line per measurement to bench/tuning.csv (variant, workers,
# first s, first changed, re-run s, re-run changed, load before each, commit,
# date). Nothing is asserted.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT"
TUNE_DIR=${TUNE_DIR:-/tmp/heatsible-tune}
WORKERS_N=${TUNE_WORKERS:-8}
REPEAT=${TUNE_REPEAT:-1}
CSV=${TUNE_CSV:-$ROOT/bench/tuning.csv}

# variant -> "what it turns back" | a command run in the exported tree | extra run flags
declare -A WHAT PATCH ARGS
V=()
variant() { V+=("$1"); WHAT[$1]=$2; PATCH[$1]=$3; ARGS[$1]=${4:-}; }
# sub FILE OLD NEW: replace a literal string, failing if it is not there
sub() { python3 - "$@" <<'PY'
import sys
f, old, new = sys.argv[1:]
s = open(f).read()
if old not in s:
    sys.exit("tune: %r not found in %s: the variant no longer applies" % (old, f))
open(f, "w").write(s.replace(old, new))
PY
}
# revert REV FILE...: undo what commit REV did to FILEs (later changes stay)
revert() { local rev=$1; shift; git -C "$ROOT" show "$rev" -- "$@" | git apply -R -C1; }

variant current "nothing: the tree as committed" ":"
variant forks5 "forks 50 -> Ansible's default 5" ":" "--forks 5"
variant no-pipelining "pipelining True -> False" \
  "sub internal/ansible/bundle.go '\"pipelining\": \"True\"' '\"pipelining\": \"False\"'"
variant no-controlpersist "ControlMaster=auto ControlPersist=60s -> one SSH connection per task" \
  "sub internal/ansible/bundle.go '\"-o ControlMaster=auto -o ControlPersist=60s\"' '\"-o ControlMaster=no\"'"
variant gather-facts "gather_facts: false -> true in every play" \
  "sed -i 's/gather_facts: false/gather_facts: true/' playbooks/*.tmpl"
variant nfs-server-apt "nfs_server: the apt module every run (no dpkg check first)" \
  "revert 90e86a3 roles/nfs_server/tasks/main.yml"
variant nfs-client-command "nfs_client: the command module for the probe and an included task file skipped per node (no raw, no end_host)" \
  "revert ff4f8fa roles/nfs_client/tasks; revert 398f047 roles/nfs_client/tasks; revert ec0f9ab roles/nfs_client/tasks"
variant cinder-19-tasks "cinder_volume: 19 tasks, one module per check (no probes)" \
  "revert 2e0fd59 roles/cinder_volume/tasks/main.yml"
variant service-module "nfs_server: the service module (it runs setup first to find the service manager)" \
  "revert 89f75be roles/nfs_server/tasks/main.yml roles/nfs_server/handlers/main.yml"
variant pv-staging "pv_register: staging dir, one copy and one kubectl apply per manifest, API server looked up first" \
  "revert cf336f6 roles/pv_register/tasks roles/pv_register/defaults"
variant nfs-server-start-verify "nfs_server: the systemd module starts the unit on every run; one nfs-ls task per export and version" \
  "revert cf336f6 roles/nfs_server/tasks"
# candidates (a change tried, not committed)
variant try-python3 "candidate: interpreter_python /usr/bin/python3 (no interpreter discovery per host)" \
  "sub internal/ansible/bundle.go '\"interpreter_python\":  \"auto_silent\"' '\"interpreter_python\":  \"/usr/bin/python3\"'"
variant try-one-free-play "candidate: storage and client roles in one play, strategy free (bench/candidates)" \
  "cp $ROOT/bench/candidates/instantiate_end.one-free-play.yml.tmpl playbooks/instantiate_end.yml.tmpl"
if [ -n "${TUNE_EXTRA:-}" ]; then # more variants, e.g. from a later commit: "name|what|patch|args"
  while IFS='|' read -r n w p a; do [ -n "$n" ] && variant "$n" "$w" "$p" "$a"; done <<< "$TUNE_EXTRA"
fi

build() {
  local v=$1 d=$TUNE_DIR/$1
  rm -rf "$d"; mkdir -p "$d/src"
  git -C "$ROOT" archive HEAD | tar -x -C "$d/src"
  (cd "$d/src" && eval "${PATCH[$v]}") || { echo "tune: variant $v does not apply" >&2; return 1; }
  (cd "$d/src" && go build -trimpath -o "$d/heatsible" ./cmd/heatsible)
  git -C "$ROOT" rev-parse --short HEAD > "$d/commit"
  echo "built $v: ${WHAT[$v]}"
}

case ${1:-} in
  list)
    for v in "${V[@]}"; do printf '%-20s %s\n' "$v" "${WHAT[$v]}"; done ;;
  build)
    if [ -n "${2:-}" ]; then build "$2"; else for v in "${V[@]}"; do build "$v" || echo "tune: skipped $v (it no longer applies to HEAD)" >&2; done; fi ;;
  run)
    [ "$(id -u)" = 0 ] || { echo "tune: run as root" >&2; exit 2; }
    want=("${V[@]}"); [ -n "${2:-}" ] && want=("$2")
    [ -s "$CSV" ] || echo "variant,workers,first_s,first_changed,rerun_s,rerun_changed,load_first,load_rerun,commit,date" > "$CSV"
    for ((r = 1; r <= REPEAT; r++)); do
      for v in "${want[@]}"; do
        [ -x "$TUNE_DIR/$v/heatsible" ] || { echo "tune: $v is not built (bench/tune.sh build)" >&2; exit 1; }
        out=$TUNE_DIR/$v/out-$r; mkdir -p "$out"
        HEATSIBLE=$TUNE_DIR/$v/heatsible BENCH_SIZES=$WORKERS_N BENCH_SKIP_BASELINE=1 BENCH_OUT=$out \
          BENCH_LOGS=$out/logs BENCH_LABEL=$v BENCH_RUN_ARGS="${ARGS[$v]}" bench/bed.sh > "$out/bed.out" 2>&1 ||
          { echo "tune: $v failed, see $out/bed.out" >&2; tail -5 "$out/bed.out" >&2; continue; }
        jq -r --arg v "$v" --arg c "$(cat "$TUNE_DIR/$v/commit")" --arg d "$(date -u +%FT%TZ)" '.rows[0] |
          [$v, .workers, .heatsible_first_s, .first_changed, .heatsible_rerun_s, .rerun_changed, .load_first, .load_rerun, $c, $d] | @csv' \
          "$out/results-$v.json" | tee -a "$CSV"
      done
    done ;;
  *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
