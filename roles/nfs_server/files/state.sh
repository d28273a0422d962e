#!/bin/sh
# nfs_server's read-only probe of the storage server, in one round trip
# (tasks/main.yml runs it with raw: no Python needed, no terminal). It
# prints one JSON document; collection/plugins/filter/nfs_server.py judges it.
#
# Arguments: PENDING_FILE NO_NFSD_FILE UNIT... --files FILE... --pkgs PKG...
#   PENDING_FILE  left by a run that wrote the configuration and has not
#                 applied it yet (tasks/converge.yml)
#   NO_NFSD_FILE  says this host's kernel has no nfsd (the test bed)
#   UNIT          systemd units to report (the two NFS servers)
#   FILE          files the role manages: SHA-1, owner, group, mode and
#                 whether their directory exists
#   PKG           packages: dpkg's status
#
# Output:
#   {"os": {"id", "version_id"}, "pending": "<content>"|null, "no_nfsd": "<content>"|null,
#    "units": {"<unit>": {"load", "active", "file"}},
#    "sha1sum": "<sha1sum's output for the files that exist>",
#    "stat": "<OWNER GROUP MODE PATH lines for them>", "dirs": "<the existing directories>",
#    "defaults": "<the RPCMOUNTDOPTS/STATDOPTS lines of /etc/default/nfs-*>",
#    "pkgs": {"<pkg>": "<dpkg status>"}}
set -u


# j STRING: STRING as a JSON string. Defined by the task: it hands this
# script through heatsible.nfv.with_json_encoder (collection/plugins/filter/shell.py).
file_or_null() {
  if [ -f "$1" ]; then j "$(cat "$1")"; else printf null; fi
}

pending=$1 no_nfsd=$2
shift 2
id="" version_id=""
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  id=$(. /etc/os-release && printf '%s' "${ID-}") version_id=$(. /etc/os-release && printf '%s' "${VERSION_ID-}")
fi
printf '{"os": {"id": %s, "version_id": %s},\n "pending": ' "$(j "$id")" "$(j "$version_id")"
file_or_null "$pending"
printf ',\n "no_nfsd": '
file_or_null "$no_nfsd"

# One systemctl for every unit: blocks of Key=Value lines.
units=""
while [ $# -gt 0 ] && [ "$1" != --files ]; do units="$units $1"; shift; done
printf ',\n "units": {'
sep=""
# shellcheck disable=SC2086 # unit names, split on purpose
systemctl show -p Id,LoadState,ActiveState,UnitFileState $units 2>/dev/null | {
  uid="" load="" active="" ufs=""
  flush() {
    [ -n "$uid" ] || return 0
    printf '%s\n  %s: {"load": %s, "active": %s, "file": %s}' "$sep" "$(j "$uid")" "$(j "$load")" "$(j "$active")" "$(j "$ufs")"
    sep="," uid="" load="" active="" ufs=""
  }
  while IFS='=' read -r k v; do
    case $k in
      Id) uid=$v ;; LoadState) load=$v ;; ActiveState) active=$v ;; UnitFileState) ufs=$v ;;
      "") flush ;;
    esac
  done
  flush
}
# Every managed file at once: sha1sum and stat of those that exist, and
# whether each one's directory exists (a builtin test).
[ "${1-}" != --files ] || shift
files="" dirs=""
while [ $# -gt 0 ] && [ "$1" != --pkgs ]; do
  if [ -f "$1" ]; then files="$files $1"; fi
  if [ -d "${1%/*}" ]; then dirs="$dirs ${1%/*}"; fi
  shift
done
# shellcheck disable=SC2086 # paths without blanks (nfs_server_param_problems), split on purpose
printf '},\n "sha1sum": %s,\n "stat": %s,\n "dirs": %s' \
  "$(j "$( [ -z "$files" ] || sha1sum $files)")" "$(j "$( [ -z "$files" ] || stat -c '%U %G %a %n' $files)")" "$(j "$dirs")"
printf ',\n "defaults": '
j "$(grep -hE '^(RPCMOUNTDOPTS|STATDOPTS)=' /etc/default/nfs-kernel-server /etc/default/nfs-common 2>/dev/null)"
# The files nfs-utils reads from /etc/nfs.conf.d (name and content), for
# nfs_server_nfs_conf_overrides: a file that sorts after heatsible's may
# set a pinned port again.
printf ',\n "nfs_conf_d": {'
sep=""
for f in /etc/nfs.conf.d/*.conf; do
  [ -f "$f" ] || continue
  printf '%s%s: %s' "$sep" "$(j "${f##*/}")" "$(j "$(cat "$f")")"
  sep=", "
done
printf '}'
printf ',\n "pkgs": {'
[ "${1-}" != --pkgs ] || shift
sep=""
if [ $# -gt 0 ]; then
  dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null | while read -r p s; do
    printf '%s%s: %s' "$sep" "$(j "$p")" "$(j "$s")"
    sep=", "
  done
fi
printf '}}\n'
