#!/usr/bin/env bash
# The Tacker v2 script's unit tests (contrib/tacker/test_v2.py), run with
# the Python of the Tacker venv the test bed builds (testbed/tacker/tacker.sh
# install, cached under /var/cache/heatsible/tacker): Tacker's own v2 code
# (objects, grant requests, OpenStack infra driver, the conductor's script
# runner) makes their inputs. Without that venv the tests that need Tacker
# are skipped and say why; the others run with python3.
#
#   TACKER_VENV=DIR   use this venv instead of the bed's
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${HEATSIBLE_CACHE:-/var/cache/heatsible}/tacker
venv=${TACKER_VENV:-}
if [ -z "$venv" ] && [ -x "$root/testbed/tacker/tacker.sh" ]; then
  venv=$("$root/testbed/tacker/tacker.sh" venv 2>/dev/null || true)
fi
if [ -z "$venv" ] || [ ! -f "$venv/.complete" ]; then
  # the newest complete venv of the cache (tacker.sh keeps one)
  venv=""
  for d in "$cache"/venv-*; do
    if [ -f "$d/.complete" ] && { [ -z "$venv" ] || [ "$d" -nt "$venv" ]; }; then venv=$d; fi
  done
fi
cd "$root/contrib/tacker"
export PYTHONDONTWRITEBYTECODE=1
# the hooks against the real binary too, when it is built (make build)
if [ -z "${HEATSIBLE_REAL_BIN:-}" ] && [ -x "$root/bin/heatsible" ]; then
  export HEATSIBLE_REAL_BIN=$root/bin/heatsible
fi
if [ -n "$venv" ] && [ -x "$venv/bin/python" ]; then
  echo "test_v2: with Tacker's venv $venv ($("$venv/bin/python" -c 'import importlib.metadata as m; print("tacker", m.version("tacker"))'))"
  exec "$venv/bin/python" -m unittest -v test_v2
fi
echo "test_v2: SKIPPED the tests that need Tacker: no Tacker venv (TACKER_VENV, or $cache/venv-* built by testbed/tacker/tacker.sh install)"
exec python3 -m unittest -v test_v2
