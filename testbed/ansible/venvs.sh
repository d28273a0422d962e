#!/bin/bash
# venvs.sh - the Ansibles that real Ansible hosts run, as Python virtualenvs
# built from PyPI and cached under $HEATSIBLE_CACHE/ansible (docs/testbed.md,
# "The Ansibles of the Ansible host"). The test bed's hosts cannot reach PyPI:
# `bed up` carries the built ones into the ansible host, at the same path.
#
# Usage: venvs.sh build [NAME...]   build the missing or outdated ones (all by default)
#        venvs.sh list              NAME PATH STATE VERSION, one a line
#        venvs.sh path NAME         the venv's directory (built or not)
#        venvs.sh names             the names, one a line
#
# Every venv is made with the machine's /usr/bin/python3 (Debian 12's 3.11,
# the same interpreter the bed's hosts have at the same path), so one built
# here runs unchanged in a host. A venv's scripts name its path in their
# shebangs: it runs only where it was built, which is why the hosts get it at
# the same path. A venv is complete when its stamp (.heatsible-venv, written
# last) matches what this script would build; anything else is rebuilt.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${HEATSIBLE_CACHE:-/var/cache/heatsible}
DIR=$CACHE/ansible
PY=${HEATSIBLE_VENV_PYTHON:-/usr/bin/python3}
STAMP=.heatsible-venv
VERSION=1   # bump to rebuild every venv

# NAME -> what goes into it. "core X" is `pip install ansible-core==X`
# (wheels only, as every "pip" but "pip-src", which may build from source);
# "+ansible Y" adds the collections heatsible's roles use (ansible.posix,
# community.general) as the `ansible` package Y ships them, copied into the
# venv's site-packages (what `ansible-galaxy collection install -p` does,
# without Galaxy: this machine reaches PyPI only); "pip ..." is pip's own
# arguments. The ansible package versions are the ones that go with each
# ansible-core: 7 with 2.14 (Debian 12 ships 7.7.0), 8 with 2.15, 9 with 2.16 (kubespray
# 2.25-2.28 pin 9.x), 10 with 2.17 (kubespray 2.29-2.30 pin 10.7.0), 11
# with 2.18 (kubespray main pins 11.13.0), 12 with 2.19.
declare -A SPEC=(
  [core-2.14]="core 2.14.18 +ansible 7.7.0"
  [core-2.15]="core 2.15.13 +ansible 8.7.0"
  [core-2.16]="core 2.16.19 +ansible 9.13.0"
  [core-2.17]="core 2.17.14 +ansible 10.7.0"
  [core-2.18]="core 2.18.19 +ansible 11.13.0"
  [core-2.19]="core 2.19.14 +ansible 12.3.0"
  # a bare `pip install ansible-core`: no collection at all
  [core-2.19-bare]="core 2.19.14"
  # kubespray main's requirements.txt (46dbdd399, as v2.31.0's): the venv
  # kubespray's docs have operators make
  [ansible-11.13.0]="pip ansible==11.13.0 bcrypt<6 cryptography==50.0.0 jmespath==1.1.0 netaddr==1.3.0 passlib==1.7.4"
  # kubespray v2.27.0's and v2.29.0's requirements.txt (ansible-core 2.16
  # and 2.17, with every collection kubespray uses, and netaddr, which its
  # ansible_version.yml checks)
  [kubespray-2.27]="pip ansible==9.13.0 cryptography==44.0.0 jmespath==1.0.1 netaddr==1.3.0"
  [kubespray-2.29]="pip ansible==10.7.0 cryptography==46.0.2 jmespath==1.0.1 netaddr==1.3.0"
  # kubespray v2.16.0's requirements.txt (the release Tacker's kubespray
  # guide documents): Ansible 2.9.20 and its Jinja, built from source (no
  # wheels for Python 3.11); without cryptography 2.8, pbr and ruamel.yaml,
  # which kubespray's own plugins and inventory builder use, not Ansible
  [kubespray-2.16]="pip-src ansible==2.9.20 jinja2==2.11.3 MarkupSafe==1.1.1 netaddr==0.7.19 jmespath==0.9.5"
  # Mitogen for Ansible (its strategy plugin) with ansible-core 2.14, for
  # make bench beside core-2.14 (docs/performance.md): bin/ansible-playbook
  # is a wrapper that turns the mitogen_linear strategy on (ANSIBLE_STRATEGY
  # and ANSIBLE_STRATEGY_PLUGINS, which beat any ansible.cfg)
  [mitogen-2.14]="mitogen core 2.14.18 +ansible 7.7.0 pip mitogen==0.3.54"
  # the newest ansible-lint, under the newest ansible-core
  [lint]="core 2.19.14 +ansible 12.3.0 pip ansible-lint==26.10.1"
  # ansible-test (the newest ansible-core's) for the collection's sanity and
  # unit tests (scripts/ansible-test.sh), run --local: pytest and the plugins
  # `ansible-test units` needs here (units.txt of ansible-test's requirements,
  # pinned); "ansible-test" primes the virtualenvs ansible-test makes itself
  # for each sanity test (pylint, pycodestyle, yamllint, voluptuous... at
  # ansible-test's own pins) under the venv's home/ (ansible-test keeps them
  # in ~/.ansible/test: scripts/ansible-test.sh runs it with that HOME)
  [ansible-test]="ansible-test core 2.19.14 pip pytest==9.2.0 pytest-xdist==3.8.0 pytest-mock==3.17.0 mock==5.2.0"
)
NAMES=(core-2.14 core-2.15 core-2.16 core-2.17 core-2.18 core-2.19 core-2.19-bare ansible-11.13.0 kubespray-2.29 kubespray-2.27 kubespray-2.16 mitogen-2.14 lint ansible-test)
COLLECTIONS=(ansible/posix community/general)

log() { printf '[venvs %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

want_stamp() { printf 'v%s %s %s\n' "$VERSION" "$("$PY" -c 'import sys; print(sys.version.split()[0])')" "${SPEC[$1]}"; }
is_built() { [ -f "$DIR/$1/$STAMP" ] && [ "$(cat "$DIR/$1/$STAMP")" = "$(want_stamp "$1")" ]; }
known() { [ -n "${SPEC[$1]+x}" ] || die "unknown venv $1 (known: ${NAMES[*]})"; }

# the `ansible` package's wheel, downloaded once
ansible_wheel() { # VERSION -> path of the wheel
  local v=$1 w
  w=$(find "$DIR/wheels" -maxdepth 1 -name "ansible-$v-*.whl" 2>/dev/null | sort | head -1)
  if [ -z "$w" ]; then
    mkdir -p "$DIR/wheels"
    "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$DIR/wheels" "ansible==$v" >&2 || die "pip download ansible==$v failed"
    w=$(find "$DIR/wheels" -maxdepth 1 -name "ansible-$v-*.whl" | sort | head -1)
    [ -n "$w" ] || die "no ansible-$v wheel in $DIR/wheels after pip download"
  fi
  echo "$w"
}

build() {
  local n=$1 d=$DIR/$1 t0=$SECONDS
  # shellcheck disable=SC2206  # the spec is words
  local words=(${SPEC[$n]}) pip=() colls="" binary=(--only-binary=:all:) mitogen=0 anstest=0
  while [ ${#words[@]} -gt 0 ]; do
    case ${words[0]} in
      mitogen) mitogen=1; words=("${words[@]:1}") ;;
      ansible-test) anstest=1; words=("${words[@]:1}") ;;
      core) pip+=("ansible-core==${words[1]}"); words=("${words[@]:2}") ;;
      +ansible) colls=${words[1]}; words=("${words[@]:2}") ;;
      pip) pip+=("${words[@]:1}"); words=() ;;
      pip-src) pip+=("${words[@]:1}"); binary=(); words=() ;;
      *) die "bad spec for $n: ${SPEC[$n]}" ;;
    esac
  done
  log "$n: building in $d (${SPEC[$n]})"
  rm -rf "$d"
  "$PY" -m venv "$d"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$d/bin/python" -m pip install -q --no-input "${binary[@]}" "${pip[@]}" >&2 \
    || { rm -rf "$d"; die "$n: pip install ${pip[*]} failed"; }
  if [ -n "$colls" ]; then
    local whl site
    whl=$(ansible_wheel "$colls")
    site=$("$d/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "$d/bin/python" - "$whl" "$site" "${COLLECTIONS[@]}" <<'EOF' || { rm -rf "$d"; die "$n: collections from $whl failed"; }
import sys, zipfile
whl, site, colls = sys.argv[1], sys.argv[2], sys.argv[3:]
prefixes = tuple("ansible_collections/%s/" % c for c in colls)
with zipfile.ZipFile(whl) as z:
    members = [m for m in z.namelist() if m.startswith(prefixes)]
    for c in colls:
        if not any(m.startswith("ansible_collections/%s/MANIFEST.json" % c) for m in members):
            sys.exit("%s has no %s" % (whl, c))
    z.extractall(site, members)
EOF
  fi
  if [ "$mitogen" = 1 ]; then
    local strat
    strat=$("$d/bin/python" -c 'import ansible_mitogen.plugins.strategy as s, os; print(os.path.dirname(s.__file__))') \
      || { rm -rf "$d"; die "$n: no ansible_mitogen in it"; }
    mv "$d/bin/ansible-playbook" "$d/bin/ansible-playbook.real"
    printf '#!/bin/sh\n# Mitogen for Ansible: its strategy for every play this ansible-playbook runs (venvs.sh)\nANSIBLE_STRATEGY_PLUGINS=%s\nANSIBLE_STRATEGY=mitogen_linear\nexport ANSIBLE_STRATEGY_PLUGINS ANSIBLE_STRATEGY\nexec %s "$@"\n' \
      "$strat" "$d/bin/ansible-playbook.real" > "$d/bin/ansible-playbook"
    chmod 755 "$d/bin/ansible-playbook"
  fi
  if [ "$anstest" = 1 ]; then
    prime_ansible_test "$d" || { rm -rf "$d"; die "$n: priming ansible-test's sanity virtualenvs failed"; }
  fi
  # byte-compile now: in a host the venv is read-only to the user who runs it
  "$d/bin/python" -m compileall -q "$d/lib" >/dev/null 2>&1 || true
  chmod -R a+rX,go-w "$d"
  want_stamp "$n" > "$d/$STAMP"
  log "$n: built in $((SECONDS - t0)) s ($(du -sh "$d" | cut -f1)): $("$d/bin/ansible-playbook" --version | sed -n 1p)"
}

# ansible-test makes a virtualenv of its own for each sanity test that needs
# packages, in ~/.ansible/test/venv, and bootstraps pip into each with a
# script from ci-files.testing.ansible.com, which this machine cannot reach:
# lay ansible-test-get-pip.py (installs the pip wheel beside it) where
# ansible-test caches that script, with the pip wheel it wants from PyPI,
# then have ansible-test make them all (--prime-venvs) in an empty collection,
# HOME being the venv's home/ (scripts/ansible-test.sh runs it so).
prime_ansible_test() { # VENV_DIR
  local d=$1 home=$1/home pipv cache tmp rc=0
  pipv=$("$d/bin/python" -c 'import types; from ansible_test._internal.python_requirements import get_venv_packages as g; print(g(types.SimpleNamespace(version="3.11"))["pip"])') || return 1
  cache=$home/.ansible/test/cache
  mkdir -p "$cache"
  "$d/bin/python" -m pip download -q --no-deps --only-binary=:all: -d "$cache" "pip==$pipv" >&2 || return 1
  cp "$HERE/ansible-test-get-pip.py" "$cache/get_pip_${pipv//./_}.py"
  tmp=$(mktemp -d)
  mkdir -p "$tmp/ansible_collections/heatsible/prime/meta"
  printf 'namespace: heatsible\nname: prime\nversion: 0.0.1\nreadme: README.md\nauthors: [heatsible]\n' > "$tmp/ansible_collections/heatsible/prime/galaxy.yml"
  printf 'requires_ansible: ">=2.14.0"\n' > "$tmp/ansible_collections/heatsible/prime/meta/runtime.yml"
  (cd "$tmp/ansible_collections/heatsible/prime" && HOME=$home PATH=$d/bin:$PATH "$d/bin/ansible-test" sanity --prime-venvs --local --python 3.11 --color no >&2) || rc=$?
  rm -rf "$tmp"
  return "$rc"
}

version_of() { # the venv's ansible-core version, read from its files (no python started)
  local f
  for f in "$DIR/$1"/lib/python3*/site-packages/ansible/release.py; do
    [ -f "$f" ] && sed -n "s/^__version__ = '\(.*\)'/\1/p" "$f"
    return 0
  done
}

cmd=${1:-list}; shift || true
case $cmd in
  build)
    [ -x "$PY" ] || die "$PY: no such interpreter (Debian's python3 and python3-venv)"
    "$PY" -c 'import venv, ensurepip' 2>/dev/null || die "$PY has no venv/ensurepip: install python3-venv"
    mkdir -p "$DIR"
    exec 8>>"$DIR/.lock"
    flock -w 3600 8 || die "another venvs.sh holds $DIR/.lock"
    [ $# -gt 0 ] || set -- "${NAMES[@]}"
    for n in "$@"; do known "$n"; if is_built "$n"; then log "$n: cached ($DIR/$n)"; else build "$n"; fi; done
    ;;
  list)
    for n in "${NAMES[@]}"; do
      if is_built "$n"; then echo "$n $DIR/$n built $(version_of "$n")"; else echo "$n $DIR/$n missing -"; fi
    done
    ;;
  path) known "${1:?usage: venvs.sh path NAME}"; echo "$DIR/$1" ;;
  names) printf '%s\n' "${NAMES[@]}" ;;
  *) die "usage: venvs.sh build [NAME...] | list | path NAME | names" ;;
esac
