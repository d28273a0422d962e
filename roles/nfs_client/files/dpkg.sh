#!/bin/sh
# nfs_client: which NFS client packages dpkg has installed, whether the
# kubelet's NFS mount helper is there and, when asked, how systemd has the
# units that NFSv3 locking needs (read-only, one round trip, as the SSH
# user).
#
# Usage: dpkg.sh NEED_HELPER UNITS PACKAGE...
# Prints "STATUS PACKAGE" for each PACKAGE dpkg knows (STATUS is dpkg's
# db:Status-Status: installed, config-files, ...); the role reads the lines
# by their first word. NEED_HELPER is True when nfs-common is one of the
# packages: then nfs-common installed without /sbin/mount.nfs is reported
# on stderr with exit 3. UNITS is a space-separated list of systemd units
# ("" for none: the request has no NFSv3 PV with remote locks): for each,
# "unit NAME LOADSTATE UNITFILESTATE" (systemctl show; "-" for a state
# systemd does not give, such as the UnitFileState of a unit it does not
# find). Nothing about units is printed on a host that systemd did not
# boot: there, mount.nfs's start-statd runs rpc.statd itself.
need_helper=$1
units=$2
shift 2
# dpkg-query's own ${...} fields, not the shell's:
# shellcheck disable=SC2016
dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$@" 2>/dev/null
if [ -n "$units" ] && [ -d /run/systemd/system ]; then
  # One call for every unit; systemctl prints a block of KEY=VALUE per
  # unit, separated by blank lines, without the properties that are empty.
  # The unit names are the role's own (no blanks, no globs): split them.
  # shellcheck disable=SC2086
  systemctl show -p Id -p LoadState -p UnitFileState -- $units 2>/dev/null | awk '
    function out() { if (id != "") print "unit", id, (load == "" ? "-" : load), (file == "" ? "-" : file); id = load = file = "" }
    /^Id=/ { id = substr($0, 4) }
    /^LoadState=/ { load = substr($0, 11) }
    /^UnitFileState=/ { file = substr($0, 15) }
    /^$/ { out() }
    END { out() }'
fi
# shellcheck disable=SC2016
if [ "$need_helper" = True ] && [ "$(dpkg-query -W -f='${db:Status-Status}' nfs-common 2>/dev/null)" = installed ] && [ ! -e /sbin/mount.nfs ]; then
  echo "/sbin/mount.nfs is missing although nfs-common is installed" >&2
  exit 3
fi
exit 0
