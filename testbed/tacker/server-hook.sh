#!/bin/bash
# The bed's server hook (testbed/heat/plugin: <pools dir>/hooks/server; tacker.sh
# up links it there). Heat's stand-in servers call it, inside heat-all, when Heat
# deletes a server:
#
#   server-hook.sh delete SERVER_ID IP[,IP...] STACK
#
# STACK is the name of the stack holding the server: only Tacker's stacks
# (v1: vnflcm_<VNF id>..., v2: vnf-<VNF id>...) are acted on; the bed's own
# stack (bed) and every other one are left alone.
#
# What a cloud does when Nova deletes a VM that Heat replaces (a heal, a scale-in,
# a whole-VNF heal, terminate): the VM and what ran in it are gone, and its
# replacement boots from the image. The bed's hosts stay; this makes them look
# like that:
#   storage (10.231.0.11): the NFS servers stopped, every /volume* mount
#     unmounted and its fstab line dropped (the new VM has the volume attached,
#     nothing mounted: heatsible mounts it again at heal-end, never formats a
#     volume with a file system);
#   a worker (10.231.0.20-83, worker-<N-20>) with the kubeadm stand-in on it:
#     what a join left goes (testbed/kubeadm/standin.sh reset), so heal-end and
#     scale-end join it again.
# Packages stay (the image has them). master-0 and lb are left alone: the bed's
# control plane and load balancer are the bed's. Every call is logged to
# testbed/run/tacker/logs/server-hook.log.
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUN=$(readlink -f "$ROOT/testbed/run")
BED=$ROOT/testbed/bin/bed
STORAGE_IP=${BED_STORAGE_IP:-10.231.0.11}
LOG=$RUN/tacker/logs/server-hook.log
mkdir -p "$(dirname "$LOG")"
exec 3>>"$LOG"
log() { echo "$(date '+%F %T') $*" >&3; }
log "called: $*"

case "${1:-}" in
  delete)
    id=${2:-} ips=${3:-} stack=${4:-}
    case $stack in vnflcm_*|vnf-*) ;; *) log "$id: stack '$stack' is not Tacker's: nothing to do"; exit 0 ;; esac
    IFS=, read -r -a list <<< "$ips"
    for ip in "${list[@]}"; do
      if [ "$ip" = "$STORAGE_IP" ]; then
        # shellcheck disable=SC2016  # expanded on storage
        "$BED" exec storage -- sh -c 'systemctl stop nfs-ganesha nfs-server 2>/dev/null
for m in $(findmnt -rn -o TARGET | grep "^/volume" | sort -r); do umount "$m" || umount -l "$m"; done
sed -i "\|[[:space:]]/volume|d" /etc/fstab
true' >&3 2>&1
        log "$id: storage's VM gone: NFS servers stopped, /volume* unmounted and out of fstab"
      elif [[ $ip =~ ^10\.231\.0\.([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 20 ] && [ "${BASH_REMATCH[1]}" -le 83 ]; then
        host=worker-$((BASH_REMATCH[1] - 20))
        root=$RUN/bed/hosts/$host/root
        if [ -x "$root/usr/bin/kubeadm" ] && grep -q 'kubeadm STAND-IN' "$root/usr/bin/kubeadm"; then
          "$ROOT/testbed/kubeadm/standin.sh" reset "$root" >&3 2>&1
          log "$id: $host's VM gone: its kubeadm join state removed (standin.sh reset)"
        else
          log "$id: $host has no kubeadm stand-in: nothing to do"
        fi
      else
        log "$id: $ip: nothing to do"
      fi
    done
    ;;
  *) echo "usage: $0 delete SERVER_ID IPS STACK" >&2; exit 2 ;;
esac
