#!/bin/sh
# bed storage-os ubuntu-20.04: what Ubuntu 20.04's
# /usr/lib/systemd/scripts/nfs-utils_env.sh (nfs-common 1:1.3.4) does,
# written for the test bed. nfs-config.service runs it. It sources the
# Debian-style defaults files (shell assignments) and writes the daemons'
# arguments to /run/sysconfig/nfs-utils, which the nfs-utils units read
# with EnvironmentFile=-/run/sysconfig/nfs-utils (rpc.statd $STATDARGS,
# rpc.mountd $RPCMOUNTDARGS, rpc.nfsd $RPCNFSDARGS, the GSS daemons).
# nfs-utils 1.3.4 reads no /etc/nfs.conf: this file is all they get.

# shellcheck disable=SC1091  # the host's files
[ -r /etc/default/nfs-common ] && . /etc/default/nfs-common
# shellcheck disable=SC1091
[ -r /etc/default/nfs-kernel-server ] && . /etc/default/nfs-kernel-server

mkdir -p /run/sysconfig
cat > /run/sysconfig/nfs-utils <<END
PIPEFS_MOUNTPOINT=/run/rpc_pipefs
RPCNFSDARGS="${RPCNFSDOPTS-} ${RPCNFSDCOUNT:-8}"
RPCMOUNTDARGS="${RPCMOUNTDOPTS-}"
STATDARGS="${STATDOPTS-}"
GSSDARGS="${RPCGSSDOPTS-}"
RPCSVCGSSDARGS="${RPCSVCGSSDOPTS-}"
SVCGSSDARGS="${RPCSVCGSSDOPTS-}"
END
