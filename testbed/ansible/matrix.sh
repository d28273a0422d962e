#!/bin/bash
# matrix.sh - heatsible's tests under every Ansible of testbed/ansible/venvs.sh
# (docs/development.md, "The Ansible matrix"). `make matrix` runs it.
#
# Usage: matrix.sh unit [VENV...]   role-level tests (roles/*_test.go, the
#                                   roles' Python tests) and the event/recap
#                                   parser's (internal/ansible) under each venv
#                                   (default: every core-* venv), ansible-lint
#                                   under the newest (venv "lint")
#        matrix.sh bed [VENV...]    the key end-to-end scenarios on the test
#                                   bed under each venv ("" for the ansible
#                                   host's own Debian 2.14; default: it and
#                                   every core-* venv), and once the kubespray
#                                   releases with their own Ansible and the
#                                   refusals
#        matrix.sh full VENV        every end-to-end test under VENV
#        matrix.sh tests VENV TEST...  these end-to-end tests under VENV
#
# bed and full need a running bed (testbed/bin/bed up); each test runs in a
# hold of its own of BED_USE_LOCK (a shared machine's bed lock, if set;
# MATRIX_BATCH=N: N tests to a hold) and puts the bed back in its default
# shape before the hold ends.
#
# MATRIX_P: go test's -p for the unit suites (default 1; CI, which has the
# machine to itself, runs 2 as its own unit tests do). MATRIX_MORE=0: only
# the roles, internal/ansible and lint suites (CI's 2.19 phase).
#
# Builds the venvs it needs first (venvs.sh build). Prints one line per
# version and suite, then a table; exits 1 if anything failed. Logs go to
# MATRIX_LOGS (default: a new directory under /tmp).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local
VENVS=testbed/ansible/venvs.sh
LOGS=${MATRIX_LOGS:-$(mktemp -d /tmp/heatsible-matrix.XXXXXX)}
mkdir -p "$LOGS"

log() { printf '[matrix %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
results=()
record() { # VENV SUITE RESULT SECONDS
  results+=("$1|$2|$3|$4")
  log "$1 $2: $3 (${4} s)"
}
suite() { # VENV SUITE LOGNAME CMD... : run CMD, record ok/FAIL
  local v=$1 s=$2 l=$LOGS/$3.log t0=$SECONDS; shift 3
  if "$@" > "$l" 2>&1; then record "$v" "$s" ok $((SECONDS - t0))
  else record "$v" "$s" "FAIL ($l)" $((SECONDS - t0)); fi
}

# The venvs whose Ansible runs heatsible's roles get every suite; the others
# (a bare ansible-core, kubespray 2.16's Ansible 2.9, which run no role of
# heatsible's: one lacks the collections the roles use, the other runs only
# kubespray) only the parser's, through heatsible's callback.
ROLE_VENVS=(core-2.14 core-2.15 core-2.16 core-2.17 core-2.18 core-2.19)
unit() {
  local v d
  [ $# -gt 0 ] || set -- "${ROLE_VENVS[@]}" core-2.19-bare kubespray-2.16
  "$VENVS" build "$@" lint
  for v in "$@"; do
    d=$("$VENVS" path "$v")
    if ! printf '%s\n' "${ROLE_VENVS[@]}" | grep -qx -- "$v"; then
      suite "$v" "internal/ansible (go)" "$v-go" env PATH="$d/bin:$PATH" go test -count=1 ./internal/ansible/
      continue
    fi
    suite "$v" "roles (python)" "$v-roles-python" make --no-print-directory role-tests PYTHON="$d/bin/python"
    # ansible-lint runs once, below, under the newest ansible-core with the
    # newest ansible-lint: the one on PATH here would not match this venv's.
    suite "$v" "roles, internal/ansible (go)" "$v-go" env PATH="$d/bin:$PATH" \
      go test -count=1 -p "${MATRIX_P:-1}" -skip '^TestAnsibleLint$' ./roles/ ./internal/ansible/
    # the other packages whose tests run ansible-playbook: request values as
    # data (internal/lcm, internal/render), masking (redact, report), signals (cmd), the LB role
    # (MATRIX_MORE=0 leaves them out: CI's 2.19 phase, for time)
    [ "${MATRIX_MORE:-1}" = 0 ] || suite "$v" "lcm, render, redact, report, cmd, external-lb (go)" "$v-go-more" env PATH="$d/bin:$PATH" \
      go test -count=1 -p "${MATRIX_P:-1}" ./internal/lcm/ ./internal/render/ ./internal/redact/ ./internal/report/ ./cmd/heatsible/ ./contrib/external-lb/
  done
  d=$("$VENVS" path lint)
  suite lint "ansible-lint $("$d/bin/ansible-lint" --version 2>/dev/null | sed -n 's/^ansible-lint \([^ ]*\).*/\1/p' | tr -d '\033' | sed 's/\[[0-9;]*m//g')" lint \
    env PATH="$d/bin:$PATH" go test -count=1 -run '^TestAnsibleLint$' ./roles/
}

# The scenarios that matter most, under each version of heatsible's roles:
# instantiate-end and its re-run with 0 changed (TestInstantiateEnd), --check
# with its report (TestCheckChangesNothing), the storage server's heal with
# its refusal, exit 6 (TestHealStorageServer), a failed task, exit 4
# (TestNFSServerDownDuringVerify), and which Ansible ran (TestAnsibleInUse).
KEY_TESTS=(TestAnsibleInUse TestInstantiateEnd TestCheckChangesNothing TestHealStorageServer TestNFSServerDownDuringVerify)
# Once, whatever BED_ANSIBLE: kubespray releases with their own Ansible, and
# the refusals.
ONCE_TESTS=(TestKubesprayAnsibleSplit TestAnsibleRefused)

# hold CMD...: run CMD holding the shared machine's bed lock (BED_USE_LOCK,
# e.g. /work/bed-use.lock; none: no lock), one short hold per call; -o: the
# daemons a bed up starts inside the hold never inherit the lock.
hold() {
  if [ -n "${BED_USE_LOCK:-}" ]; then flock -o -w 10800 "$BED_USE_LOCK" "$@"; else "$@"; fi
}

# e2e VENV TEST...: with the bed's requests naming VENV (BED_ANSIBLE; "" for
# the ansible host's own Ansible), run the tests, MATRIX_BATCH (default 1) to
# a hold, and put the bed back (bed up without knobs) before each hold ends.
# A test's result and time are read from go test -v's own line for it.
# MATRIX_NOT_AFTER (anything `date -d` reads, e.g. "2026-11-28 00:10"): a
# hold that gets the lock after then runs nothing (a shared bed's deadline).
e2e() {
  local v=$1 label=${1:-debian-2.14} batch=${MATRIX_BATCH:-1} i t l re dur not_after=""; shift
  local tests=("$@")
  [ -z "${MATRIX_NOT_AFTER:-}" ] || not_after=$(date -d "$MATRIX_NOT_AFTER" +%s)
  for ((i = 0; i < ${#tests[@]}; i += batch)); do
    local part=("${tests[@]:i:batch}") t0=$SECONDS
    re=$(IFS='|'; echo "${part[*]}")
    l=$LOGS/bed-$label-${part[0]}.log
    # shellcheck disable=SC2016  # expanded by the inner sh
    hold sh -c '
      v=$1 re=$2 not_after=$3
      if [ -n "$not_after" ] && [ "$(date +%s)" -gt "$not_after" ]; then echo "matrix: not started: past MATRIX_NOT_AFTER"; exit 1; fi
      echo "matrix: hold from $(date +%s)"
      trap "testbed/bin/bed up >/dev/null 2>&1" EXIT
      BED_ANSIBLE=$v testbed/bin/bed up > "$4" 2>&1 || { echo "bed up BED_ANSIBLE=$v failed:"; tail -20 "$4"; exit 1; }
      HEATSIBLE_BED=$PWD/testbed/run HEATSIBLE_HEAT_ENV=$PWD/testbed/run/heat/env \
        go test -p 1 -count=1 -timeout 60m -v -run "^($re)\$" ./internal/e2e' sh "$v" "$re" "$not_after" "${l%.log}.bed-up.log" > "$l" 2>&1 || true
    local from; from=$(sed -n 's/^matrix: hold from \([0-9]*\)$/\1/p' "$l")
    [ -z "$from" ] || log "$label: ${part[*]}: the hold took $(($(date +%s) - from)) s (bed up with BED_ANSIBLE=$v, the tests, bed up), $((SECONDS - t0)) s with the wait for the lock"
    for t in "${part[@]}"; do
      dur=$(sed -n "s/^--- [A-Z]*: $t (\([0-9.]*\)s)\$/\1/p" "$l" | tail -1)
      if grep -q '^matrix: not started' "$l"; then record "$label" "$t" "not run (past MATRIX_NOT_AFTER)" -
      elif grep -q "^--- PASS: $t " "$l"; then record "$label" "$t" ok "$dur"
      elif grep -q "^--- SKIP: $t " "$l"; then record "$label" "$t" "skip ($l)" "$dur"
      else record "$label" "$t" "FAIL ($l)" "${dur:--}"; fi
    done
  done
}

bed_matrix() {
  [ $# -gt 0 ] || set -- "" "${ROLE_VENVS[@]}"
  "$VENVS" build "${ROLE_VENVS[@]}" core-2.19-bare ansible-11.13.0 kubespray-2.29 kubespray-2.27 kubespray-2.16
  local v
  for v in "$@"; do e2e "$v" "${KEY_TESTS[@]}"; done
  e2e "" "${ONCE_TESTS[@]}"
}

# full VENV: every end-to-end test under VENV, one hold each.
full() {
  local v=${1:?usage: matrix.sh full VENV} tests
  "$VENVS" build "$v"
  mapfile -t tests < <(grep -ho '^func Test[A-Za-z0-9_]*' internal/e2e/*_test.go | sed 's/^func //' | grep -vx TestMain | sort)
  e2e "$v" "${tests[@]}"
}

table() {
  printf '\n| venv | suite | result | s (go test'"'"'s own) |\n|---|---|---|---|\n'
  local r; for r in "${results[@]}"; do IFS='|' read -r a b c e <<< "$r"; printf '| %s | %s | %s | %s |\n' "$a" "$b" "$c" "$e"; done
  printf '\nlogs: %s\n' "$LOGS"
}

cmd=${1:-}; shift || true
case $cmd in
  unit) unit "$@" ;;
  bed) bed_matrix "$@" ;;
  full) full "$@" ;;
  tests) v=${1?usage: matrix.sh tests VENV TEST...}; shift; [ -z "$v" ] || "$VENVS" build "$v"; e2e "$v" "$@" ;;
  *) echo "usage: matrix.sh unit [VENV...] | bed [VENV...] | full VENV | tests VENV TEST..." >&2; exit 2 ;;
esac
table
for r in "${results[@]}"; do case $r in *"|FAIL"*) exit 1 ;; esac; done
