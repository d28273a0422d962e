#!/usr/bin/env bash
# reset.sh - put a running bed back to "instantiate-end never ran", in place,
# so that the next run of heatsible or of bench/baseline.sh is a real first
# run. Used by bench/bed.sh before every first run. It undoes exactly what
# instantiate-end does (docs/testbed.md describes the fresh state):
#
#   storage:  nfs-ganesha stopped and disabled, /etc/ganesha/ganesha.conf back
#             to the base image's file, nfs-server stopped; every volume of the
#             request unmounted, its /etc/fstab line removed, its signatures
#             wiped (wipefs -a: the bed's volumes hold only what the benchmark
#             wrote) and its mount point removed - the volume is blank again,
#             as a new Cinder volume is, so the first run formats it;
#   k8s:      the request's PersistentVolumes deleted;
#   ansible:  Ansible's persisted SSH masters closed (ssh -O exit on each
#             control socket), so the next run opens its own connections;
#   masters and workers: with BENCH_PURGE_CLIENT=1, nfs-common purged (the
#             base image has it; without it nfs_client only checks), and the
#             apt index declared fresh (update-success-stamp touched) so that
#             neither heatsible nor the baseline runs apt-get update, which
#             would reach the Debian mirror through the bed's apt-cacher-ng:
#             both then install the one .deb from the proxy's cache.
#
# Recreating the hosts (bed down/up) would do the same and more slowly; the
# host keys, users and base image stay as they are here.
# Usage: bench/reset.sh  (as root, on a bed that is up)
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

mounts=$(jq -r '(.additionalParams // .).k8s_cluster_installation_param.storage_server.cinder_volume_setup_params[].mount_to' "$RUN/request.json")
pvs=$(for p in $(jq -r '(.additionalParams // .).k8s_cluster_installation_param.pv_registration_params[].pv_manifest_file_path' "$RUN/request.json"); do
  awk '/^metadata:/{m=1; next} m && /^  name:/{print $2; exit}' "$RUN/package/$p"; done)

# k8s first: a PV must not outlive its export (kubectl on master-0, as root,
# with the admin kubeconfig of any layout the bed gives master-0: kubespray's
# root-only files, or kubeadm's admin.conf and the user's ~/.kube/config)
if [ -n "$pvs" ]; then
  # shellcheck disable=SC2016,SC2086
  "$BED" exec master-0 -- sh -c 'for k in /etc/kubernetes/admin.conf /root/.kube/config /home/*/.kube/config; do
      [ -f "$k" ] && exec kubectl --kubeconfig "$k" delete pv --ignore-not-found --wait=true --timeout=60s "$@"; done
    echo "reset: no admin kubeconfig on master-0" >&2; exit 1' sh $pvs >/dev/null
fi

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
  # a volume formatted but not mounted (a failed run) is blank again too
  jq -r '.volumes[]? | "\(.id) \(.device)"' <(python3 -c 'import json,sys,yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)' "$RUN/topology.yaml") |
    while read -r id dev; do
      # shellcheck disable=SC2016
      printf 'for d in %q %q; do [ -b "$d" ] && { wipefs -q -a "$d"; break; }; done\n' "/dev/disk/by-id/virtio-${id:0:20}" "$dev"
    done
} > "$RUN/.bench-reset.sh"
"$BED" exec storage -- sh -c 'cat > /etc/ganesha/ganesha.conf' < "$BASE/etc/ganesha/ganesha.conf"
"$BED" exec storage -- sh < "$RUN/.bench-reset.sh"
rm -f "$RUN/.bench-reset.sh"

# the Ansible host: close the persisted SSH masters of earlier runs
# shellcheck disable=SC2016
"$BED" exec ansible -- sh -c 'for s in /home/*/.ansible/cp/* /root/.ansible/cp/*; do
  [ -S "$s" ] && ssh -o ControlPath="$s" -O exit bed 2>/dev/null; done; true'

if [ "${BENCH_PURGE_CLIENT:-0}" = 1 ]; then
  pids=()
  for h in master-0 $(for ((i = 0; i < BED_WORKERS; i++)); do echo "worker-$i"; done); do
    "$BED" exec "$h" -- sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y -q nfs-common >/dev/null 2>&1 || true
      mkdir -p /var/lib/apt/periodic && touch /var/lib/apt/periodic/update-success-stamp' &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
fi
echo "reset: storage blank (${mounts//$'\n'/ }), PVs deleted (${pvs//$'\n'/ }), SSH masters closed$([ "${BENCH_PURGE_CLIENT:-0}" = 1 ] && echo ", nfs-common purged")"
