#!/usr/bin/env bash
# Installs what heatsible's build, lint and tests need on this machine (Debian
# 12, as root). Idempotent: packages already installed are skipped quickly.
# The test bed's own needs (debootstrap, systemd-container, apt-cacher-ng,
# Keystone/Heat, etcd) are installed by testbed/bin/bed and its parts.
set -euo pipefail

# python3-venv: testbed/ansible/venvs.sh makes the ansible-core venvs the
# tests run with it (docs/development.md, "The Ansible matrix")
PKGS=(ansible ansible-lint sshpass openssh-server openssh-client libnfs-utils shellcheck curl time haproxy python3-venv)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present"
  exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_get=(apt-get -o DPkg::Lock::Timeout=900 -y -q --no-install-recommends)
if ! apt-cache policy "${missing[0]}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  for try in 1 2 3; do apt-get -o DPkg::Lock::Timeout=900 update -qq && break; sleep $((try * 10)); done
fi
"${apt_get[@]}" install "${missing[@]}" >/dev/null
echo "deps: done"
