#!/usr/bin/env bash
# Runs every test: brings the local test bed up (hosts, NFS, Kubernetes
# control plane, Keystone + Heat), runs the Go tests (unit and end-to-end)
# against it, the bed's smoke test and the linters, then takes the bed down.
# KEEP_BED=1 leaves the bed running afterwards (for a developer re-running
# one test).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local

t0=$(date +%s)
phase() { echo "== [$(( $(date +%s) - t0 )) s] $*"; }

if [ "${KEEP_BED:-0}" != 1 ]; then
  trap 'phase "test bed down"; testbed/bin/bed down || true' EXIT
fi

phase "test bed up, and beside it the Ansibles the tests run (venvs from PyPI, cached under /var/cache/heatsible/ansible)"
# The venvs build while the bed comes up (both mostly wait on the network and
# the disk): on a fresh machine they cost 227 s (1.9 GB, no pip cache) on
# their own; cached, about 1 s. core-2.19 and lint: the 2.19 phase below;
# core-2.19-bare and kubespray-2.16 (Ansible 2.9): TestAnsibleRefused; the
# kubespray pins: TestKubesprayAnsibleSplit (both skip without them). The bed
# binds the cache's directory into the Ansible host: it sees them when built.
venv_log=$(mktemp)
testbed/ansible/venvs.sh build core-2.19 lint core-2.19-bare kubespray-2.16 kubespray-2.27 kubespray-2.29 ansible-11.13.0 > "$venv_log" 2>&1 &
venv_pid=$!
testbed/bin/bed up

export HEATSIBLE_BED="$PWD/testbed/run"
export HEATSIBLE_HEAT_ENV="$PWD/testbed/run/heat/env"

phase "go tests: every package but the end-to-end tests (internal/heat's real-Heat test uses the bed's Heat)"
# Two packages at once: most of their time is spent waiting on ansible-playbook
# and sshd, not on the CPU.
mapfile -t unit < <(go list ./... | grep -v '/internal/e2e$')
go test -p 2 -count=1 -timeout 30m "${unit[@]}"

phase "the Ansibles' venvs (built beside the bed)"
if ! wait "$venv_pid"; then cat "$venv_log" >&2; echo "test-all: building the Ansibles' venvs failed" >&2; exit 1; fi
tail -n 8 "$venv_log"; rm -f "$venv_log"

phase "go end-to-end tests on the bed, but TestTacker (below)"
# -v: each scenario logs its exit code, wall time and recap, so the CI log
# is the record of what ran on the bed. The whole suite took 1992 s on
# 2026-11-28 (47 tests, the Tacker ones 880 s of it); TestTacker, which
# holds them since, runs on its own below.
go test -p 1 -count=1 -timeout 40m -v -skip '^TestTacker$' ./internal/e2e

# What needs neither the bed nor the machine to itself runs beside TestTacker
# (the longest end-to-end test, its waits bounded at 10-15 min per Tacker
# operation, so it has nothing that a busier machine makes fail): the roles'
# Python tests, the 2.19 phase, the Tacker shim's and v2 script's unit tests
# and the linters. Their output comes after TestTacker's, in their order.
# Measured on 2026-11-28 (docs/development.md): both passed; TestTacker's
# operations were slower while these ran, so the overlap saves their time
# less that.
phase "TestTacker on the bed (every scenario through the bed's Tacker); beside it: role tests, the 2.19 phase, contrib's unit tests, lint"
side_log=$(mktemp)
(
  set -e
  phase "(beside TestTacker) the roles' filter plugins and host-side scripts (Python unit tests, collection/tests/unit and roles/*/tests)"
  make --no-print-directory role-tests
  phase "(beside TestTacker) the newest ansible-core (2.19) and ansible-lint: role and event-parser tests (make matrix-unit runs every version, and lcm, redact, report, cmd, external-lb under each)"
  MATRIX_P=2 MATRIX_MORE=0 testbed/ansible/matrix.sh unit core-2.19
  phase "(beside TestTacker) contrib: the Tacker MgmtDriver shim (against a fake heatsible)"
  (cd contrib/tacker && python3 -m unittest -q test_shim test_vim test_kubeadm)
  # and against the Tacker the bed installed (its venv): Tacker's own classes,
  # options and source (the kubeadm variant's tests need TACKER_SRC: skipped)
  if [ "${BED_TACKER:-1}" != 0 ]; then
    tacker_py=$(testbed/tacker/tacker.sh venv)/bin/python
    (cd contrib/tacker && PYTHONDONTWRITEBYTECODE=1 "$tacker_py" -W ignore -m unittest -q test_real_tacker)
  fi
  phase "(beside TestTacker) contrib: the Tacker v2 script (Tacker's own v2 code around it, a fake heatsible)"
  scripts/test-tacker-v2.sh
  phase "(beside TestTacker) lint"
  make --no-print-directory lint
  phase "(beside TestTacker) done"
) > "$side_log" 2>&1 &
side_pid=$!
side_done() { # SIDE_PID LOG: wait for the job beside TestTacker, print its output, its exit status
  local rc=0
  wait "$1" || rc=$?
  echo "---- beside TestTacker ----"; cat "$2"; rm -f "$2"
  return "$rc"
}
if ! go test -p 1 -count=1 -timeout 30m -v -run '^TestTacker$' ./internal/e2e; then
  side_done "$side_pid" "$side_log" || true
  echo "test-all: TestTacker failed" >&2
  exit 1
fi
if ! side_done "$side_pid" "$side_log"; then echo "test-all: a test beside TestTacker failed (above)" >&2; exit 1; fi

phase "test bed smoke test"
testbed/smoke/smoke.sh

phase "all tests passed"
