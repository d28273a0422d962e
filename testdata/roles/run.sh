#!/bin/bash
# Run the roles against the test bed: first run, re-run (must be changed=0),
# --check --diff (must be changed=0), a file written through NFS from a
# worker, and another re-run that must leave it in place.
# Usage: testdata/roles/run.sh [ganesha|kernel]   (the bed must be up)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
impl=${1:-ganesha}
out=$(mktemp -d /tmp/heatsible-roles.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$here/make_inventory.py" "$out" --impl "$impl" >/dev/null
export ANSIBLE_CONFIG=$out/ansible.cfg
log=${LOG_DIR:-$out}
pb() { # name, args...
  local name=$1; shift
  echo "=== $name: ansible-playbook $*"
  ansible-playbook -e "@$out/secrets.yml" "$@" | tee "$log/$name.log" | sed -n '/PLAY RECAP/,$p'
  return "${PIPESTATUS[0]}"
}
changed0() { # every host of the recap has changed=0
  if grep -E '^\S+ +: ok=' "$log/$1.log" | grep -vq 'changed=0 '; then
    echo "FAIL: $1 changed something"; return 1; fi
  echo "ok: $1 changed=0"
}
pb first "$here/site.yml"
pb rerun "$here/site.yml"; changed0 rerun
pb check "$here/site.yml" --check --diff; changed0 check
pb write "$here/nfs_write.yml"
pb rerun2 "$here/site.yml"; changed0 rerun2
pb write2 "$here/nfs_write.yml"; changed0 write2
