#!/bin/bash
# smoke.sh - end-to-end check of a running test bed (testbed/bin/bed up).
#
#  1. every host accepts the bed user's password over ssh, its host key
#     verified against testbed/run/known_hosts (from the machine)
#  2. from the ansible host, `ansible all -m ping` reaches every host, host keys
#     checked (/etc/ssh/ssh_known_hosts, no StrictHostKeyChecking=no)
#  3. the storage host has its volumes: /dev/vdX block devices and
#     /dev/disk/by-id/virtio-<id[:20]> links to them
#  4. an ext4 file system made on a scratch loop device mounts on the storage
#     host (the bed's own volumes are never written)
#  5. nfs-ganesha on storage exports a directory on that ext4; every worker
#     writes a file through it with nfs-cp; storage reads each file back
#  6. a PersistentVolume created with kubectl on master-0 goes Available
#     (skipped, and counted as failed, when the bed has no Kubernetes)
#
# Everything it changes on the hosts is undone at the end; a running nfs-ganesha
# (configured by heatsible) keeps its config and exports (the smoke export is
# added and removed over D-Bus); the bed's volumes are never written.
# Last line: "N passed, M failed"; exit status 1 on any failure.
set -euo pipefail

TB=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
RUN=$TB/run
BED=$TB/bin/bed
[ "$(id -u)" = 0 ] || { echo "smoke: run as root" >&2; exit 2; }
if ! [ -s "$RUN/env" ] || ! [ -s "$RUN/known_hosts" ] || ! [ -s "$RUN/topology.yaml" ]; then
  echo "smoke: no running bed (testbed/run/env missing): run 'bed up' first" >&2; echo "0 passed, 1 failed"; exit 1
fi
set -a
# shellcheck disable=SC1091
. "$RUN/env"
set +a
USER_=$BED_USER
export SSHPASS=$BED_PASSWORD
STORAGE=10.231.0.11 MASTER=10.231.0.12 ANSIBLE=10.231.0.10
WORKERS=()
for ((i = 0; i < BED_WORKERS; i++)); do WORKERS+=("worker-$i"); done
EXPORT=/srv/bed-smoke/nfs
EXPORT_ID=9977
TAG=smoke-$$-$(date +%s)

passed=0 failed=0
ok()   { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
bad()  { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
info() { printf '     %s\n' "$*"; }

# ssh HOST_OR_IP CMD: password login, host key checked against the bed's known_hosts
bssh() {
  local h=$1; shift
  sshpass -e ssh -o UserKnownHostsFile="$RUN/known_hosts" -o StrictHostKeyChecking=yes -o LogLevel=ERROR \
    -o ConnectTimeout=5 -o PubkeyAuthentication=no -o PreferredAuthentications=password "$USER_@$h" "$@"
}

fip_of() { echo "10.231.1.$((20 + ${1#worker-}))"; }
ip_of()  { case $1 in ansible) echo $ANSIBLE ;; storage) echo $STORAGE ;; master-0) echo $MASTER ;; worker-*) echo "10.231.0.$((20 + ${1#worker-}))" ;; esac; }
ALL=(ansible storage master-0 "${WORKERS[@]}")

# ---------------------------------------------------------------- 1. ssh from the machine
# parallel checks write "PASS ..."/"FAIL ..." into $RES/<n>; collect() counts them in order
RES=$(mktemp -d)
trap 'rm -rf "$RES"' EXIT
collect() {
  local f line
  for f in $(find "$RES" -type f -printf '%f\n' | sort -n); do
    line=$(cat "$RES/$f"); rm -f "$RES/$f"
    case $line in PASS\ *) ok "${line#PASS }" ;; *) bad "${line#FAIL }" ;; esac
  done
}
n=0
for h in "${ALL[@]}"; do
  addrs=("$(ip_of "$h")"); [[ $h == worker-* ]] && addrs+=("$(fip_of "$h")")
  for a in "${addrs[@]}"; do
    n=$((n + 1))
    if out=$(bssh "$a" 'hostname; sudo -n id -u' 2>&1) && [ "$out" = "$h"$'\n'0 ]; then
      echo "PASS ssh $USER_@$a: host key verified, hostname $h, passwordless sudo"
    else
      echo "FAIL ssh $USER_@$a ($h): $out"
    fi > "$RES/$n" &
  done
done
wait
collect

# ---------------------------------------------------------------- 2. ansible all -m ping
inv="[bed]\n"
for h in "${ALL[@]}"; do
  a=$(ip_of "$h"); [[ $h == worker-* ]] && a=$(fip_of "$h")
  inv+="$h ansible_host=$a\n"
done
inv+="[bed:vars]\nansible_user=$USER_\nansible_password=$BED_PASSWORD\nansible_python_interpreter=/usr/bin/python3\n"
cfg="[defaults]\nhost_key_checking = True\ntimeout = 30\nforks = 20\n[ssh_connection]\npipelining = True\n"
t0=$(date +%s)
inv64=$(printf '%b' "$inv" | base64 -w0) cfg64=$(printf '%b' "$cfg" | base64 -w0)
# the inventory (it holds the password) goes through stdin, not the command line
if out=$(echo "$inv64" | bssh $ANSIBLE "set -e; d=\$(mktemp -d); trap 'rm -rf \$d' EXIT; umask 077
      base64 -d > \$d/inventory.ini; echo $cfg64 | base64 -d > \$d/ansible.cfg
      ANSIBLE_CONFIG=\$d/ansible.cfg ansible all -i \$d/inventory.ini -m ping -o" 2>&1); then
  n=$(grep -c 'SUCCESS' <<< "$out" || true)
  if [ "$n" = "${#ALL[@]}" ]; then ok "ansible all -m ping from the ansible host: ${n}/${#ALL[@]} SUCCESS ($(( $(date +%s) - t0 ))s)"
  else bad "ansible all -m ping: $n/${#ALL[@]} SUCCESS"; info "$out"; fi
else
  bad "ansible all -m ping from the ansible host failed"; printf '%s\n' "$out" | tail -20 | sed 's/^/     /'
fi

# ---------------------------------------------------------------- 3. volumes on storage
# topology.yaml lines: "  - {resource: R, id: ID, device: /dev/vdX}"
while read -r id dev; do
  link=/dev/disk/by-id/virtio-${id:0:20}
  if out=$(bssh $STORAGE "test -b $dev && test \"\$(readlink -f $link)\" = $dev && echo ok; sudo -n blkid -p $dev >/dev/null 2>&1 && echo formatted || echo unformatted" 2>&1) \
     && [ "$(head -1 <<< "$out")" = ok ]; then
    ok "storage: $dev is a block device, $link -> $dev ($(tail -1 <<< "$out"))"
  else
    bad "storage: volume $id: $dev / $link: $out"
  fi
done < <(sed -n 's/.*{resource: [^,]*, id: \([^,]*\), device: \([^}]*\)}.*/\1 \2/p' "$RUN/topology.yaml")

# ---------------------------------------------------------------- 4. ext4 on a scratch device
scratch_img=$(mktemp /tmp/bed-smoke-XXXXXX.img)
truncate -s 64M "$scratch_img"
loop=$(losetup -f --show "$scratch_img")
majmin=$(printf '%d %d' "0x$(stat -c %t "$loop")" "0x$(stat -c %T "$loop")")
cleanup() {
  bssh $STORAGE "if [ -f /run/bed-smoke/mode ]; then
      case \$(cat /run/bed-smoke/mode) in
        dbus) sudo -n dbus-send --system --print-reply --dest=org.ganesha.nfsd /org/ganesha/nfsd/ExportMgr \
                org.ganesha.nfsd.exportmgr.RemoveExport uint16:$EXPORT_ID >/dev/null 2>&1 || true ;;
        unit) sudo -n systemctl stop bed-smoke-ganesha >/dev/null 2>&1 || true ;;
      esac
    fi
    sudo -n umount /srv/bed-smoke 2>/dev/null || true; sudo -n rmdir /srv/bed-smoke 2>/dev/null || true
    sudo -n rm -rf /run/bed-smoke /dev/bed-smoke" >/dev/null 2>&1 || echo "smoke: cleanup on storage failed" >&2
  losetup -d "$loop" 2>/dev/null || true
  rm -rf "$scratch_img" "$RES"
}
trap cleanup EXIT
# the scratch device appears in the storage host's /dev as /dev/bed-smoke (as nspawn's --bind does for vdX)
"$BED" exec storage -- sh -c "rm -f /dev/bed-smoke; mknod -m 660 /dev/bed-smoke b $majmin; chgrp disk /dev/bed-smoke"
if out=$(bssh $STORAGE "set -e; sudo -n mkfs.ext4 -q -F /dev/bed-smoke; sudo -n mkdir -p /srv/bed-smoke; sudo -n mount /dev/bed-smoke /srv/bed-smoke
      findmnt -n -o FSTYPE /srv/bed-smoke; echo $TAG | sudo -n tee /srv/bed-smoke/probe >/dev/null; sudo -n cat /srv/bed-smoke/probe" 2>&1) \
   && [ "$out" = "ext4"$'\n'"$TAG" ]; then
  ok "storage: mkfs.ext4 + mount of a scratch block device; a file written reads back"
else
  bad "storage: ext4 on a scratch device: $out"
fi

# ---------------------------------------------------------------- 5. nfs-ganesha export, workers write, storage reads
# The host's own nfs-ganesha setup is left alone: when nfs-ganesha runs (heatsible
# configured it), the smoke export is added and removed over D-Bus; otherwise a
# transient unit runs ganesha.nfsd with a config under /run/bed-smoke.
export_block="EXPORT { Export_Id = $EXPORT_ID; Path = $EXPORT; Pseudo = $EXPORT; Access_Type = RW; Squash = No_Root_Squash;
  Protocols = 3, 4; Transports = TCP; SecType = sys; Clients = 10.231.0.0/24; FSAL { Name = VFS; } }"
ganesha_conf="NFS_CORE_PARAM { Protocols = 3, 4; Bind_Addr = $STORAGE; }
NFSV4 { Graceless = true; }
$export_block
LOG { Default_Log_Level = EVENT; }"
if out=$(printf '%s\n' "$ganesha_conf" | bssh $STORAGE "set -e
      sudo -n mkdir -p /run/bed-smoke $EXPORT; sudo -n chmod 1777 $EXPORT
      sudo -n tee /run/bed-smoke/ganesha.conf >/dev/null
      if systemctl is-active -q nfs-ganesha; then
        echo dbus | sudo -n tee /run/bed-smoke/mode >/dev/null
        sudo -n sed -n '/^EXPORT/,\$p' /run/bed-smoke/ganesha.conf | sudo -n sed '/^LOG/d' | sudo -n tee /run/bed-smoke/export.conf >/dev/null
        sudo -n dbus-send --system --print-reply --dest=org.ganesha.nfsd /org/ganesha/nfsd/ExportMgr \
          org.ganesha.nfsd.exportmgr.AddExport string:/run/bed-smoke/export.conf 'string:EXPORT(Export_Id=$EXPORT_ID)' >/dev/null
        echo 'mode: export added to the running nfs-ganesha over D-Bus'
      else
        echo unit | sudo -n tee /run/bed-smoke/mode >/dev/null
        sudo -n systemd-run --quiet --collect --unit=bed-smoke-ganesha /usr/bin/ganesha.nfsd -F \
          -f /run/bed-smoke/ganesha.conf -L /run/bed-smoke/ganesha.log -p /run/bed-smoke/ganesha.pid -N NIV_EVENT
        echo 'mode: ganesha.nfsd in a transient unit'
      fi
      for i in \$(seq 100); do sudo -n /usr/sbin/showmount -e $STORAGE 2>/dev/null | grep -q '^$EXPORT ' && break; sleep 0.2; done
      sudo -n /usr/sbin/showmount -e $STORAGE" 2>&1) && grep -q "^$EXPORT " <<< "$out"; then
  ok "storage: nfs-ganesha exports $EXPORT (showmount -e $STORAGE; $(grep '^mode:' <<< "$out" | cut -d' ' -f2-))"
else
  bad "storage: nfs-ganesha export: $out"
fi
# every worker writes at once; storage reads them all back over one ssh (sshd's
# MaxStartups would drop many simultaneous logins to one host)
for h in "${WORKERS[@]}"; do
  f=$TAG-$h.txt
  bssh "$(fip_of "$h")" "set -e; echo '$TAG from $h' > /tmp/$f; nfs-cp /tmp/$f nfs://$STORAGE$EXPORT/$f; rm -f /tmp/$f" > "$RES/$h.out" 2>&1 &
done
wait
back=$(bssh $STORAGE "cd $EXPORT && for f in $TAG-*.txt; do [ -f \"\$f\" ] && echo \"\$f:\$(cat \"\$f\")\"; done" 2>&1 || true)
for h in "${WORKERS[@]}"; do
  f=$TAG-$h.txt
  if grep -qxF "$f:$TAG from $h" <<< "$back"; then
    ok "$h wrote $EXPORT/$f with nfs-cp; storage reads it back"
  else
    bad "$h: nfs-cp to $STORAGE:$EXPORT/$f: $(cat "$RES/$h.out"); storage: $(grep "^$f:" <<< "$back" || echo 'file missing')"
  fi
  rm -f "$RES/$h.out"
done
[ ${#WORKERS[@]} -gt 0 ] || info "no workers (WORKERS=0): no NFS client write"

# ---------------------------------------------------------------- 6. a PersistentVolume from master-0
pv=bed-$TAG
manifest="apiVersion: v1
kind: PersistentVolume
metadata: {name: $pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  nfs: {server: $STORAGE, path: $EXPORT}"
if [ -z "${KUBECONFIG:-}" ]; then
  bad "kubernetes: the bed has no Kubernetes (no KUBECONFIG in testbed/run/env)"
elif out=$(printf '%s\n' "$manifest" | bssh $MASTER "set -e; kubectl apply -f - >/dev/null
      kubectl wait --for=jsonpath='{.status.phase}'=Available pv/$pv --timeout=60s >/dev/null
      kubectl get pv $pv -o jsonpath='{.status.phase}'; kubectl delete pv $pv --wait=false >/dev/null" 2>&1) \
     && [ "$out" = Available ]; then
  ok "master-0: kubectl created PV $pv (nfs $STORAGE:$EXPORT); it went Available"
else
  bad "master-0: PV $pv: $out"
  bssh $MASTER "kubectl delete pv $pv --ignore-not-found --wait=false" >/dev/null 2>&1 || true
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
