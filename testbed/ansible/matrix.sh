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
#                                   bed under each venv (needs a bed: run it
#                                   under flock -w 10800 /work/bed-use.lock on
#                                   a shared machine)
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
ROLE_VENVS=(core-2.14 core-2.16 core-2.17 core-2.18 core-2.19)
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
    # shellcheck disable=SC2016  # expanded by the inner sh
    suite "$v" "roles (python)" "$v-roles-python" env PYTHONDONTWRITEBYTECODE=1 sh -c '
      for t in roles/*/tests roles/filter_tests; do [ -d "$t" ] || continue; "$0" -m unittest discover -s "$t" || exit 1; done' "$d/bin/python"
    # ansible-lint runs once, below, under the newest ansible-core with the
    # newest ansible-lint: the one on PATH here would not match this venv's.
    suite "$v" "roles + internal/ansible (go)" "$v-go" env PATH="$d/bin:$PATH" \
      go test -count=1 -p 1 -skip '^TestAnsibleLint$' ./roles/ ./internal/ansible/
  done
  d=$("$VENVS" path lint)
  suite lint "ansible-lint $("$d/bin/ansible-lint" --version 2>/dev/null | sed -n 's/^ansible-lint \([^ ]*\).*/\1/p' | tr -d '\033' | sed 's/\[[0-9;]*m//g')" lint \
    env PATH="$d/bin:$PATH" go test -count=1 -run '^TestAnsibleLint$' ./roles/
}

table() {
  printf '\n| venv | suite | result | s |\n|---|---|---|---|\n'
  local r; for r in "${results[@]}"; do IFS='|' read -r a b c e <<< "$r"; printf '| %s | %s | %s | %s |\n' "$a" "$b" "$c" "$e"; done
  printf '\nlogs: %s\n' "$LOGS"
}

cmd=${1:-}; shift || true
case $cmd in
  unit) unit "$@" ;;
  *) echo "usage: matrix.sh unit [VENV...] | bed [VENV...]" >&2; exit 2 ;;
esac
table
for r in "${results[@]}"; do case $r in *"|FAIL"*) exit 1 ;; esac; done
