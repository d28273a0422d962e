#!/usr/bin/env bash
# reset.sh - put a running bed back to "instantiate-end never ran", in place,
# so that the next run of heatsible or of bench/baseline.sh is a real first
# run. Used by bench/bed.sh before every first run. It undoes what
# instantiate-end leaves (docs/testbed.md describes the fresh state), so that
# a first run after it changes the same tasks as one on hosts `bed up` has
# just created (measured 2026-11-24: 15 changed tasks at the bed's default
# shape with the roles of 8c4f077; 10 in bench/bed.sh's shapes with the
# roles after the issue-19 cuts, which count fewer changes):
#
#   storage:  nfs-ganesha stopped and disabled, /etc/ganesha/ganesha.conf back
#             to the base image's file, nfs-server stopped; every volume of the
#             request unmounted, its /etc/fstab line removed, its signatures
#             wiped (wipefs -a: the bed's volumes hold only what the benchmark
#             wrote) and its mount point removed - the volume is blank again,
#             as a new Cinder volume is, so the first run formats it;
#             /etc/exports back to the base image's (Tacker's sample
#             driver appends to it; `exportfs -ra` after, when it differed);
#             nfs_server's files removed: the unit drop-ins
#             /etc/systemd/system/{nfs-server,nfs-ganesha}.service.d/
#             heatsible-mounts.conf (and their directories, which the base
#             image does not have), /etc/nfs.conf.d/zz-heatsible.conf (the pinned
#             NFSv3 ports; the directory is the base image's) and the pending
#             mark /var/lib/heatsible/nfs_server.pending; cinder_volume's
#             record /var/lib/heatsible/volumes.json and the directory (not in
#             the base image); then `systemctl daemon-reload` and rpc.statd
#             stopped (nfs-ganesha-lock and rpc-statd: neither runs on a new
#             host), so no daemon keeps the pinned ports;
#   k8s:      the request's PersistentVolumes deleted, and Tacker's VIM
#             objects (roles/k8s_vim): ClusterRoleBinding heatsible-tacker-vim,
#             Secret and ServiceAccount kube-system/heatsible-tacker-vim(-token);
#   ansible:  Ansible's persisted SSH masters closed (ssh -O exit on each
#             control socket), so the next run opens its own connections;
#   masters and workers: with BENCH_PURGE_CLIENT=1, nfs-common purged (the
#             base image has it; without it nfs_client only checks), and the
#             apt index declared fresh (update-success-stamp touched) so that
#             neither heatsible nor the baseline runs apt-get update, which
#             would reach the Debian mirror through the bed's apt-cacher-ng:
#             both then install the one .deb from the proxy's cache.
#
# What it cannot put back as a new host has it: the volume gets a new file
# system UUID on the next run (a new volume would too), its blocks are not
# zeroed (only the signatures); the kernel is the machine's, shared by every
# host, with no nfsd and no lockd (statd's pinned lockd ports go nowhere on
# the bed: /proc/sys/fs/nfs is absent, rpc.statd says so in the journal;
# ganesha serves NLM itself); the storage host's journal, its uptime and
# systemd's memory of the units it ran (e.g. their last exit status) stay;
# the cluster's other objects (the API server and etcd are not re-created
# either); the Ansible host's caches. None of these is something
# instantiate-end looks at.
#
# Recreating the hosts (bed down/up) would do the same and more slowly; the
# host keys, users and base image stay as they are here.
# Usage: bench/reset.sh  (as root, on a bed that is up)
#        bench/reset.sh packages  (install again what BENCH_PURGE_CLIENT=1 purged)
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
RUN=$ROOT/testbed/run
BED=$ROOT/testbed/bin/bed
BASE=${HEATSIBLE_CACHE:-/var/cache/heatsible}/bed/base
[ -s "$RUN/request.json" ] || { echo "reset: no bed (testbed/run/request.json)" >&2; exit 2; }
set -a
# shellcheck disable=SC1091
. "$RUN/env"
set +a

# The packages the purge takes (nfs-common, and nfs-kernel-server, which
# depends on it) are written down on the host, and `reset.sh packages` (bench/
# bed.sh, after each size and on exit) installs them again as the base image
# has them: installed, their server unit disabled. Without it, every host a
# fresh-clients run touched stayed without nfs-kernel-server (seen on the bed
# 2026-11-27: master-0 and worker-0/1 from 23:10 to 23:32).
PURGED=/var/lib/heatsible-bench-purged
clients() { echo master-0; for ((i = 0; i < BED_WORKERS; i++)); do echo "worker-$i"; done; }
if [ "${1:-}" = packages ]; then
  pids=()
  for h in $(clients); do
    # shellcheck disable=SC2016
    "$BED" exec "$h" -- sh -c '[ -s '"$PURGED"' ] || exit 0
      printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(sort -u '"$PURGED"') >/dev/null; rc=$?
      rm -f /usr/sbin/policy-rc.d
      systemctl disable -q nfs-server.service 2>/dev/null || true
      [ "$rc" = 0 ] && rm -f '"$PURGED"'; exit "$rc"' &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ "$rc" = 0 ] || { echo "reset: could not install again what the nfs-common purge removed (hosts keep $PURGED)" >&2; exit 1; }
  echo "reset: the packages the nfs-common purge removed are installed again"
  exit 0
fi

mounts=$(jq -r '(.additionalParams // .).k8s_cluster_installation_param.storage_server.cinder_volume_setup_params[].mount_to' "$RUN/request.json")
pvs=$(for p in $(jq -r '(.additionalParams // .).k8s_cluster_installation_param.pv_registration_params[].pv_manifest_file_path' "$RUN/request.json"); do
  awk '/^metadata:/{m=1; next} m && /^  name:/{print $2; exit}' "$RUN/package/$p"; done)

# k8s first: a PV must not outlive its export (kubectl on master-0, as root,
# with the admin kubeconfig of any layout the bed gives master-0: kubespray's
# root-only files, or kubeadm's admin.conf and the user's ~/.kube/config).
# Then the VIM's objects (names: roles/k8s_vim/defaults, internal/render/vim.go).
# shellcheck disable=SC2016,SC2086
"$BED" exec master-0 -- sh -c 'for k in /etc/kubernetes/admin.conf /root/.kube/config /home/*/.kube/config; do
    [ -f "$k" ] || continue
    k() { kubectl --kubeconfig "$k" "$@" --ignore-not-found --wait=true --timeout=60s; }
    [ $# -eq 0 ] || k delete pv "$@" || exit
    k delete clusterrolebinding heatsible-tacker-vim || exit
    k -n kube-system delete secret heatsible-tacker-vim-token || exit
    k -n kube-system delete serviceaccount heatsible-tacker-vim; exit
  done
  echo "reset: no admin kubeconfig on master-0" >&2; exit 1' sh $pvs >/dev/null

# storage
{
  echo 'set -eu'
  echo 'systemctl disable -q --now nfs-ganesha 2>/dev/null || true'
  echo 'systemctl stop nfs-server 2>/dev/null || true'
  for m in $mounts; do
    printf 'm=%q\n' "$m"
    # shellcheck disable=SC2016
    echo 'dev=""; if findmnt -n -o SOURCE --mountpoint "$m" >/dev/null; then dev=$(findmnt -n -o SOURCE --mountpoint "$m"); umount "$m"; fi
awk -v m="$m" '\''$1 ~ /^#/ || $2 != m'\'' /etc/fstab > /etc/fstab.reset && cat /etc/fstab.reset > /etc/fstab && rm -f /etc/fstab.reset
[ -z "$dev" ] || wipefs -q -a "$dev"
rmdir "$m" 2>/dev/null || true'
  done
  # nfs_server's and cinder_volume's files (roles/*/defaults, vars): the
  # drop-ins, the ports, the pending mark, the volumes' record; a directory
  # the base image lacks goes too (when empty)
  echo 'rm -f /etc/systemd/system/nfs-server.service.d/heatsible-mounts.conf /etc/systemd/system/nfs-ganesha.service.d/heatsible-mounts.conf /etc/nfs.conf.d/zz-heatsible.conf /var/lib/heatsible/nfs_server.pending /var/lib/heatsible/volumes.json'
  for d in /etc/systemd/system/nfs-server.service.d /etc/systemd/system/nfs-ganesha.service.d /etc/nfs.conf.d /var/lib/heatsible; do
    [ -d "$BASE$d" ] || printf 'rmdir %q 2>/dev/null || true\n' "$d"
  done
  # the units as a new host has them: no drop-ins loaded, no statd running
  # (it would keep the pinned ports)
  echo 'systemctl daemon-reload'
  echo 'systemctl stop nfs-ganesha-lock rpc-statd 2>/dev/null || true'
  # a volume formatted but not mounted (a failed run) is blank again too
  jq -r '.volumes[]? | "\(.id) \(.device)"' <(python3 -c 'import json,sys,yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)' "$RUN/topology.yaml") |
    while read -r id dev; do
      # shellcheck disable=SC2016
      printf 'for d in %q %q; do [ -b "$d" ] && { wipefs -q -a "$d"; break; }; done\n' "/dev/disk/by-id/virtio-${id:0:20}" "$dev"
    done
} > "$RUN/.bench-reset.sh"
"$BED" exec storage -- sh -c 'cat > /etc/ganesha/ganesha.conf' < "$BASE/etc/ganesha/ganesha.conf"
# /etc/exports back to the base image's (Tacker's sample driver appends its
# exports there: bench/tacker_driver.py) and, when it was not, the kernel's
# export table (/var/lib/nfs/etab) made from it again
# shellcheck disable=SC2016
"$BED" exec storage -- sh -c 'f=$(mktemp); cat > "$f"
  if ! cmp -s "$f" /etc/exports; then cat "$f" > /etc/exports; exportfs -ra; fi; rm -f "$f"' < "$BASE/etc/exports"
"$BED" exec storage -- sh < "$RUN/.bench-reset.sh"
rm -f "$RUN/.bench-reset.sh"

# the Ansible host: close the persisted SSH masters of earlier runs
# shellcheck disable=SC2016
"$BED" exec ansible -- sh -c 'for s in /home/*/.ansible/cp/* /root/.ansible/cp/*; do
  [ -S "$s" ] && ssh -o ControlPath="$s" -O exit bed 2>/dev/null; done; true'

if [ "${BENCH_PURGE_CLIENT:-0}" = 1 ]; then
  pids=()
  for h in $(clients); do
    # shellcheck disable=SC2016
    "$BED" exec "$h" -- sh -c 'dpkg -s nfs-common >/dev/null 2>&1 && apt-get -s purge nfs-common 2>/dev/null | awk '"'"'$1 == "Purg" {print $2}'"'"' >> '"$PURGED"'
      DEBIAN_FRONTEND=noninteractive apt-get purge -y -q nfs-common >/dev/null 2>&1 || true
      mkdir -p /var/lib/apt/periodic && touch /var/lib/apt/periodic/update-success-stamp' &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
fi
echo "reset: storage blank (${mounts//$'\n'/ }; NFS drop-ins, ports, record removed, statd stopped), PVs deleted (${pvs//$'\n'/ }), VIM objects deleted, SSH masters closed$([ "${BENCH_PURGE_CLIENT:-0}" = 1 ] && echo ", nfs-common purged")"
