#!/usr/bin/env bash
# ansible-test.sh - ansible-test (ansible-core 2.19's, from PyPI) on the
# collection heatsible.nfv (collection/): its sanity tests and its unit tests.
#
# Usage: scripts/ansible-test.sh sanity [ANSIBLE-TEST ARGS...]
#        scripts/ansible-test.sh units [ANSIBLE-TEST ARGS...]
#
# ansible-test works on a collection only at .../ansible_collections/NS/NAME:
# the collection is copied (the working tree as it is, without tests/output
# and byte code) to a temporary ansible_collections/heatsible/nfv, where
# ansible-test runs with --local in the cached venv `ansible-test` of
# testbed/ansible/venvs.sh (built here when missing; make test builds it
# beside the bed). No Docker: --local, with HOME the venv's home/, where the
# venv build primed the virtualenvs ansible-test makes for each sanity test.
#
# Pythons: everything runs under 3.11, Debian 12's (the Ansible host's
# controller side and the bed's hosts). The module side also runs on Ubuntu
# 24.04's 3.12 and 20.04's 3.8: `sanity` adds the compile and import tests
# under those when the machine has them (pyenv's, or python3.X on PATH) and
# says so when it does not (only without ARGS: with them, 3.11 alone).
# ANSIBLE_TEST_EXTRA_PYTHONS (default "3.8 3.12") lists them; empty: none.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=${1:?usage: ansible-test.sh sanity|units [ansible-test args...]}; shift
case $cmd in sanity | units) ;; *) echo "ansible-test.sh: unknown command $cmd (sanity, units)" >&2; exit 2 ;; esac
src=collection
[ -f "$src/galaxy.yml" ] || { echo "ansible-test.sh: no collection at $src/ (galaxy.yml)" >&2; exit 1; }

testbed/ansible/venvs.sh build ansible-test 2>&1 | grep -v ': cached (' >&2 || true
venv=$(testbed/ansible/venvs.sh path ansible-test)
[ -x "$venv/bin/ansible-test" ] || { echo "ansible-test.sh: no ansible-test in $venv (testbed/ansible/venvs.sh build ansible-test)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dst=$tmp/ansible_collections/heatsible/nfv
mkdir -p "$dst" "$tmp/bin"
tar -C "$src" --exclude=./tests/output --exclude=__pycache__ --exclude='*.pyc' -cf - . | tar -C "$dst" -xf -
# the unit tests that run a role's own file (a probe script, a template)
# find roles/ upwards of their real path, beside collection/ (helpers.py):
# the repository's, linked beside the copy
ln -s "$PWD/roles" "$tmp/roles"
ln -s "$PWD/$src" "$tmp/collection"

at() { # ansible-test with the venv's HOME and PATH, in the collection's copy
  (cd "$dst" && HOME=$venv/home PATH=$venv/bin:$tmp/bin:$PATH "$venv/bin/ansible-test" "$@" --local --color no)
}

case $cmd in
  units)
    at units --python 3.11 "$@"
    ;;
  sanity)
    rc=0
    at sanity --python 3.11 "$@" || rc=$?
    [ $# -eq 0 ] || exit "$rc"
    for v in ${ANSIBLE_TEST_EXTRA_PYTHONS-3.8 3.12}; do
      py=""
      for c in "$(command -v "python$v" 2>/dev/null)" /usr/bin/python"$v" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v"; do
        # a pyenv shim on PATH may name a version it does not run: try it
        if [ -n "$c" ] && [ -x "$c" ] && py=$("$c" -c 'import sys; print(sys.executable)' 2>/dev/null); then break; fi
        py=""
      done
      if [ -z "$py" ]; then echo "ansible-test.sh: no python$v here: compile and import tests under $v skipped"; continue; fi
      ln -sf "$py" "$tmp/bin/python$v"
      at sanity --python "$v" --test compile --test import || rc=$?
    done
    exit "$rc"
    ;;
esac
