#!/bin/sh
# nfs_server's read-only probe of the storage server, in one round trip
# (tasks/main.yml runs it with raw: no Python needed, no terminal). It
# prints one JSON document, read with from_json in vars/main.yml. It
# replaces seven tasks (README.md, "Exceptions").
#
# Arguments: PENDING_FILE NO_NFSD_FILE UNIT... --dirs DIR... --files FILE... --pkgs PKG...
#   PENDING_FILE  left by a run that wrote the configuration and has not
#                 applied it yet (tasks/main.yml)
#   NO_NFSD_FILE  says this host's kernel has no nfsd (the test bed)
#   UNIT          systemd units to report (the NFS servers and statd units)
#   DIR           directories the role writes into: those that exist
#   FILE          files the role writes from templates: SHA-1, owner, group,
#                 mode of those that exist
#   PKG           packages: dpkg's status
#
# Output:
#   {"os": {"id", "version_id"}, "pending": "<content>"|null, "no_nfsd": "<content>"|null,
#    "units": {"<unit>": {"load", "active", "file"}}, "dirs": ["<existing directory>", ...],
#    "files": {"<path>": "<sha1> <owner> <group> <mode>"},
#    "nfs_conf_d": {"<name>.conf": "<content>"}, "pkgs": {"<pkg>": "<dpkg status>"}}
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
while [ $# -gt 0 ] && [ "$1" != --dirs ]; do units="$units $1"; shift; done
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
# The directories the role writes into that exist (builtin tests).
[ "${1-}" != --dirs ] || shift
printf '},\n "dirs": ['
sep=""
while [ $# -gt 0 ] && [ "$1" != --files ]; do
  if [ -d "$1" ]; then printf '%s%s' "$sep" "$(j "$1")"; sep=", "; fi
  shift
done
printf '],\n "files": {'
[ "${1-}" != --files ] || shift
sep=""
while [ $# -gt 0 ] && [ "$1" != --pkgs ]; do
  if [ -f "$1" ]; then
    sum=$(sha1sum <"$1") attrs=$(stat -c '%U %G %a' "$1")
    printf '%s%s: %s' "$sep" "$(j "$1")" "$(j "${sum%% *} $attrs")"
    sep=", "
  fi
  shift
done
printf '}'
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
