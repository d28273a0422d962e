#!/bin/sh
# cinder_volume's read-only probe of the storage server, in one round trip
# (tasks/main.yml runs it with raw: no Python needed on the host, no
# terminal). It prints one JSON document; collection/plugins/filter/cinder_volume.py
# (cinder_volume_plan) judges it. Nothing here decides anything.
#
# Arguments:
#   STATE_FILE                     heatsible's record of the volumes it identified
#   --volume ID MOUNT_TO HEAT_DEV NAME...
#                                  one per volume: its id, mount_to, the device
#                                  name from Heat's attachment ("" if none) and
#                                  the /dev/disk/by-id names derived from the id
#   --dirs DIR...                  the export directories
#
# Output (keys sorted as written):
#   {"udev": "settled" | "timeout" | "absent",
#    "state": "<the state file's content>" | null,
#    "volumes": [{"id", "mount_to",
#                 "names": [{"path", "kind": "block"|"other"|"none", "dev"}],
#                 "heat": {"path", "kind", "dev"},
#                 "mounts": ["MAJ:MIN SOURCE FSTYPE", ...]   (findmnt -r, bottom first),
#                 "fstab": "<the first fstab line for mount_to>" | ""}],
#    "devices": {"<resolved device>": {"majmin": "hex:hex", "rc": blkid rc,
#                "type", "uuid", "same_uuid": ["MAJ:MIN DEVICE", ...]}},
#    "dirs": {"<dir>": "dir" | "missing" | "notdir"}}
set -u


# j STRING: STRING as a JSON string. Defined by the task: it hands this
# script through heatsible.nfv.with_json_encoder (collection/plugins/filter/shell.py).

# A name: does it exist, is it a block device (symlinks followed), and
# which device node it resolves to.
name() {
  if [ -b "$1" ]; then
    printf '{"path": %s, "kind": "block", "dev": %s}' "$(j "$1")" "$(j "$(readlink -f "$1")")"
  elif [ -e "$1" ] || [ -L "$1" ]; then
    printf '{"path": %s, "kind": "other", "dev": ""}' "$(j "$1")"
  else
    printf '{"path": %s, "kind": "none", "dev": ""}' "$(j "$1")"
  fi
}

state_file=$1
shift

# udev makes the by-id names; after a hot-attach they may still be coming.
udev=absent
if command -v udevadm >/dev/null 2>&1; then
  if udevadm settle --timeout=10 >/dev/null 2>&1; then udev=settled; else udev=timeout; fi
fi
printf '{"udev": "%s",\n "state": ' "$udev"
if [ -f "$state_file" ]; then j "$(cat "$state_file")"; else printf null; fi
printf ',\n "volumes": ['

devs=""        # every block device met, once each (newline-separated)
sep=""
while [ "${1-}" = --volume ]; do
  id=$2 m=$3 heat=$4
  shift 4
  printf '%s\n  {"id": %s, "mount_to": %s, "names": [' "$sep" "$(j "$id")" "$(j "$m")"
  sep="," nsep=""
  while [ $# -gt 0 ] && [ "$1" != --volume ] && [ "$1" != --dirs ]; do
    printf '%s%s' "$nsep" "$(name "$1")"
    if [ -b "$1" ]; then devs="$devs$(readlink -f "$1")
"; fi
    nsep=", "
    shift
  done
  printf '],\n   "heat": '
  if [ -n "$heat" ]; then
    name "$heat"
    if [ -b "$heat" ]; then devs="$devs$(readlink -f "$heat")
"; fi
  else
    printf null
  fi
  # What is mounted on mount_to (raw: one line each, special characters
  # as \x..; stacked mounts bottom first).
  printf ',\n   "mounts": ['
  msep=""
  findmnt -n -r -o MAJ:MIN,SOURCE,FSTYPE --mountpoint "$m" 2>/dev/null | while IFS= read -r l; do
    printf '%s%s' "$msep" "$(j "$l")"
    msep=", "
  done
  printf '],\n   "fstab": '
  j "$(awk -v m="$m" '$1 !~ /^#/ && $2 == m { print $1, $2, $3, $4, $5, $6; exit }' /etc/fstab 2>/dev/null)"
  printf '}'
done

# Each device once: blkid's low-level probe (no cache; rc 2: nothing at
# all), and every device of the host that carries the same file-system
# UUID (libblkid, as mount and systemd resolve UUID=).
printf '],\n "devices": {'
dsep=""
for d in $(printf '%s' "$devs" | sort -u); do
  rc=0
  out=$(blkid -p -o export "$d" 2>/dev/null) || rc=$?
  type="" uuid=""
  while IFS='=' read -r k v; do
    case $k in TYPE) type=$v ;; UUID) uuid=$v ;; esac
  done <<EOF
$out
EOF
  printf '%s\n  %s: {"majmin": "%s", "rc": %d, "type": %s, "uuid": %s, "same_uuid": [' \
    "$dsep" "$(j "$d")" "$(stat -L -c '%t:%T' "$d")" "$rc" "$(j "$type")" "$(j "$uuid")"
  if [ -n "$uuid" ]; then
    usep=""
    for u in $(blkid -o device -t UUID="$uuid" 2>/dev/null); do
      printf '%s%s' "$usep" "$(j "$(stat -L -c '%t:%T' "$u" 2>/dev/null) $u")"
      usep=", "
    done
  fi
  printf ']}'
  dsep=","
done

printf '},\n "dirs": {'
[ "${1-}" != --dirs ] || shift
dsep=""
for d; do
  if [ -d "$d" ]; then s=dir; elif [ -e "$d" ] || [ -L "$d" ]; then s=notdir; else s=missing; fi
  printf '%s%s: "%s"' "$dsep" "$(j "$d")" "$s"
  dsep=", "
done
printf '}}\n'
