#!/bin/sh
# nfs_client: which NFS client packages dpkg has installed, and whether the
# kubelet's NFS mount helper is there (read-only, one round trip, as the SSH
# user).
#
# Usage: dpkg.sh NEED_HELPER PACKAGE...
# Prints "STATUS PACKAGE" for each PACKAGE dpkg knows (STATUS is dpkg's
# db:Status-Status: installed, config-files, ...); the role reads the lines
# by their first word. NEED_HELPER is True when nfs-common is one of the
# packages: then nfs-common installed without /sbin/mount.nfs is reported
# on stderr with exit 3.
need_helper=$1
shift
# dpkg-query's own ${...} fields, not the shell's:
# shellcheck disable=SC2016
dpkg-query -W -f='${db:Status-Status} ${Package}\n' "$@" 2>/dev/null
# shellcheck disable=SC2016
if [ "$need_helper" = True ] && [ "$(dpkg-query -W -f='${db:Status-Status}' nfs-common 2>/dev/null)" = installed ] && [ ! -e /sbin/mount.nfs ]; then
  echo "/sbin/mount.nfs is missing although nfs-common is installed" >&2
  exit 3
fi
exit 0
