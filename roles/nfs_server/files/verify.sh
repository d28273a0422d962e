#!/bin/bash
# nfs_server's verification, read-only, in one round trip (tasks/verify.yml
# runs it with raw). It looks and prints one JSON document; the judgement is
# collection/plugins/filter/nfs_server.py (nfs_server_verify). In order, each step only
# when the one before passed:
#   1. port 2049 on the bind address accepts a connection (waited for, up to
#      TRIES x DELAY seconds);
#   2. kernel only: exportfs -v (the kernel's export table; necessary, not
#      sufficient: it only reads /var/lib/nfs/etab);
#   3. the MOUNT protocol's export list, as a client sees it (showmount -e,
#      retried), and rpcbind's table (rpcinfo -p: the NFSv3 side ports);
#   4. MOUNT + READDIR over each NFS version from user space (nfs-ls,
#      libnfs), for every export, each retried: what a kubelet's mount needs.
# With SERVE=0 (this host cannot serve NFS: no nfsd) only step 2 runs.
# Host-name clients are resolved here (getent ahosts) so that the judgement
# knows the forms exportfs and mountd print them in.
#
# Arguments: TRIES DELAY ADDR URL_HOST IMPL SERVE --names NAME... --checks DIR VERSION...
#
# Output: {"names": {"<name>": {"canonical", "addresses": [...]}},
#          "exportfs": "<exportfs -v>", "port": {"open", "seconds"},
#          "showmount": {"ok", "error", "text"}, "rpcinfo": "<rpcinfo -p>",
#          "nfsls": [{"dir", "version", "ok", "error"}] | "absent"}
set -u

# j STRING: STRING as a JSON string. Defined by the task: it hands this
# script through heatsible.nfv.with_json_encoder (collection/plugins/filter/shell.py).
last_line() { printf '%s\n' "$1" | sed '/^[[:space:]]*$/d' | tail -n 1; }

tries=$1 delay=$2 addr=$3 host=$4 impl=$5 serve=$6
shift 6
[ "${1-}" != --names ] || shift
printf '{"names": {'
sep=""
while [ $# -gt 0 ] && [ "$1" != --checks ]; do
  out=$(getent ahosts "$1" 2>/dev/null)
  canonical=$(printf '%s\n' "$out" | awk 'NR == 1 { print $3 }')
  printf '%s%s: {"canonical": %s, "addresses": [' "$sep" "$(j "$1")" "$(j "$canonical")"
  asep=""
  for a in $(printf '%s\n' "$out" | awk '{ print $1 }' | sort -u); do
    printf '%s%s' "$asep" "$(j "$a")"
    asep=", "
  done
  printf ']}'
  sep=", "
  shift
done
[ "${1-}" != --checks ] || shift
printf '},\n "exportfs": '
if [ "$impl" = kernel ]; then j "$(exportfs -v 2>&1)"; else printf '""'; fi
if [ "$serve" != 1 ]; then printf '}\n'; exit 0; fi

start=$SECONDS deadline=$((SECONDS + tries * delay))
open=true
# shellcheck disable=SC2016 # expanded by the inner bash
until timeout 3 bash -c ': < "/dev/tcp/$1/2049"' _ "$addr" 2>/dev/null; do
  if [ "$SECONDS" -ge "$deadline" ]; then open=false; break; fi
  sleep 1
done
printf ',\n "port": {"open": %s, "seconds": %d}' "$open" "$((SECONDS - start))"
if [ "$open" != true ]; then printf '}\n'; exit 0; fi

n=1 ok=true
until out=$(showmount -e "$addr" 2>&1); do
  if [ "$n" -ge "$tries" ]; then ok=false; break; fi
  n=$((n + 1))
  sleep "$delay"
done
if [ "$ok" = true ]; then
  printf ',\n "showmount": {"ok": true, "error": "", "text": %s}' "$(j "$out")"
else
  printf ',\n "showmount": {"ok": false, "error": %s, "text": ""}}\n' "$(j "$(last_line "$out")")"
  exit 0
fi
printf ',\n "rpcinfo": %s' "$(j "$(rpcinfo -p "$addr" 2>&1)")"

if ! command -v nfs-ls >/dev/null 2>&1; then printf ',\n "nfsls": "absent"}\n'; exit 0; fi
printf ',\n "nfsls": ['
sep=""
while [ $# -ge 2 ]; do
  dir=$1 ver=$2 n=1 ok=true
  shift 2
  until err=$(nfs-ls "nfs://$host$dir?version=$ver" 2>&1 >/dev/null); do
    if [ "$n" -ge "$tries" ]; then ok=false; break; fi
    n=$((n + 1))
    sleep "$delay"
  done
  if [ "$ok" = true ]; then err=""; fi
  printf '%s\n  {"dir": %s, "version": %s, "ok": %s, "error": %s}' "$sep" "$(j "$dir")" "$(j "$ver")" "$ok" "$(j "$(last_line "$err")")"
  sep=","
done
printf ']}\n'
