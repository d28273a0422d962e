#!/bin/bash
# The bed's volume hook (testbed/heat/plugin: <pools dir>/hooks/volume; tacker.sh
# up links it there). Heat's stand-in resources call it, inside heat-all:
#
#   volume-hook.sh attach VOLUME_ID DEVICE SERVER_ID IP[,IP...] STACK   a server created with the volume
#   volume-hook.sh delete VOLUME_ID STACK                               the volume deleted
#
# STACK is the name of the stack holding the server or volume: only Tacker's stacks (v1: vnflcm_<VNF id>, v2: vnf-<VNF id>) are
# acted on; the bed's own stack (bed) and every other one are left alone.
#
# What Nova and Cinder do on a cloud, for the stacks Tacker creates: a volume
# attached to a server whose address is the storage host's (10.231.0.11)
# becomes a new, empty block device there, /dev/hs-v-<id[:8]>, with the link
# /dev/disk/by-id/virtio-<id[:20]> (a virtio-blk disk whose serial is the
# volume id), backed by testbed/run/bed/volumes/<id>.img (BED_VOLUME_MB, sparse).
# Deleting the volume removes the link, the node, the loop device and the
# image: its data is gone, as with a deleted Cinder volume.
# The bed's own stack's volumes (testbed/run/bed/volumes.want) are the bed's:
# left alone. Every call is logged to testbed/run/tacker/logs/volume-hook.log.
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUN=$(readlink -f "$ROOT/testbed/run")
ST=$RUN/bed
BED=$ROOT/testbed/bin/bed
STORAGE_IP=${BED_STORAGE_IP:-10.231.0.11}
SIZE_MB=${BED_VOLUME_MB:-1024}
LOG=$RUN/tacker/logs/volume-hook.log
mkdir -p "$(dirname "$LOG")"
exec 3>>"$LOG"
log() { echo "$(date '+%F %T') $*" >&3; }
log "called: $*"

ours() { # a volume of the bed's own stack?
  [ -f "$ST/volumes.want" ] && awk -v id="$1" '$2 == id {f=1} END {exit !f}' "$ST/volumes.want"
}
valid_id() { [[ $1 =~ ^[0-9a-f-]{36}$ ]]; }

case "${1:-}" in
  attach)
    id=$2 ips=${5:-} stack=${6:-}
    case $stack in vnflcm_*|vnf-*) ;; *) log "$id: stack '$stack' is not Tacker's: nothing to do"; exit 0 ;; esac
    valid_id "$id" || { log "not a volume id: $id"; exit 2; }
    case ",$ips," in *",$STORAGE_IP,"*) ;; *) log "$id: not attached to the storage host ($ips): nothing to do"; exit 0 ;; esac
    if ours "$id"; then log "$id: the bed's own volume: nothing to do"; exit 0; fi
    img=$ST/volumes/$id.img
    mkdir -p "$ST/volumes"
    [ -f "$img" ] || truncate -s "${SIZE_MB}M" "$img"
    loop=$(losetup -j "$img" -O NAME -n | head -1)
    [ -n "$loop" ] || loop=$(losetup -f --show "$img")
    maj=$((16#$(stat -c %t "$loop"))); min=$((16#$(stat -c %T "$loop")))
    node=/dev/hs-v-${id:0:8}
    "$BED" exec storage -- sh -c "rm -f $node && mknod -m 660 $node b $maj $min && chgrp disk $node && mkdir -p /dev/disk/by-id && ln -sfn ../../${node#/dev/} /dev/disk/by-id/virtio-${id:0:20}" >&3 2>&1
    log "$id: $img on $loop, storage:$node, by-id virtio-${id:0:20}"
    ;;
  delete)
    id=$2 stack=${3:-}
    case $stack in vnflcm_*|vnf-*) ;; *) log "$id: stack '$stack' is not Tacker's: nothing to do"; exit 0 ;; esac
    valid_id "$id" || { log "not a volume id: $id"; exit 2; }
    if ours "$id"; then log "$id: the bed's own volume: nothing to do"; exit 0; fi
    img=$ST/volumes/$id.img
    [ -f "$img" ] || { log "$id: no image: nothing to do"; exit 0; }
    node=/dev/hs-v-${id:0:8}
    "$BED" exec storage -- sh -c "l=/dev/disk/by-id/virtio-${id:0:20}; [ \"\$(readlink \$l)\" = ../../${node#/dev/} ] && rm -f \$l; rm -f $node" >&3 2>&1 || log "$id: storage not reachable; its node stays until the host is recreated"
    for d in $(losetup -j "$img" -O NAME -n); do losetup -d "$d" 2>/dev/null || log "could not detach $d"; done
    rm -f "$img"
    log "$id: deleted (image, loop device, storage:$node)"
    ;;
  *) echo "usage: $0 attach VOLUME_ID DEVICE SERVER_ID IPS STACK | delete VOLUME_ID STACK" >&2; exit 2 ;;
esac
