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
# Everything it changes on the hosts is undone at the end (ganesha stopped, its
# config restored, the scratch device unmounted and detached).
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
for h in "${ALL[@]}"; do
  addrs=("$(ip_of "$h")"); [[ $h == worker-* ]] && addrs+=("$(fip_of "$h")")
  for a in "${addrs[@]}"; do
    if out=$(bssh "$a" 'hostname; sudo -n id -u' 2>&1) && [ "$out" = "$h"$'\n'0 ]; then
      ok "ssh $USER_@$a: host key verified, hostname $h, passwordless sudo"
    else
      bad "ssh $USER_@$a ($h): $out"
    fi
  done
done

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
  bssh $STORAGE "sudo -n systemctl stop nfs-ganesha >/dev/null 2>&1 || true
    if [ -f /etc/ganesha/ganesha.conf.bed-smoke ]; then sudo -n mv /etc/ganesha/ganesha.conf.bed-smoke /etc/ganesha/ganesha.conf; fi
    if [ -f /run/bed-smoke-rpcbind-was-inactive ]; then sudo -n systemctl stop rpcbind.socket rpcbind.service >/dev/null 2>&1 || true; sudo -n rm -f /run/bed-smoke-rpcbind-was-inactive; fi
    sudo -n umount /srv/bed-smoke 2>/dev/null || true; sudo -n rmdir /srv/bed-smoke 2>/dev/null || true
    sudo -n rm -f /dev/bed-smoke" >/dev/null 2>&1 || echo "smoke: cleanup on storage failed" >&2
  losetup -d "$loop" 2>/dev/null || true
  rm -f "$scratch_img"
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
ganesha_conf="NFS_CORE_PARAM { Protocols = 3, 4; Bind_Addr = $STORAGE; }
NFSV4 { Graceless = true; }
EXPORT { Export_Id = 77; Path = $EXPORT; Pseudo = $EXPORT; Access_Type = RW; Squash = No_Root_Squash;
  Protocols = 3, 4; Transports = TCP; SecType = sys; Clients = 10.231.0.0/24; FSAL { Name = VFS; } }
LOG { Default_Log_Level = EVENT; }"
if out=$(printf '%s\n' "$ganesha_conf" | bssh $STORAGE "set -e
      systemctl is-active -q rpcbind.socket || systemctl is-active -q rpcbind.service || sudo -n touch /run/bed-smoke-rpcbind-was-inactive
      [ -f /etc/ganesha/ganesha.conf.bed-smoke ] || sudo -n cp -p /etc/ganesha/ganesha.conf /etc/ganesha/ganesha.conf.bed-smoke
      sudo -n tee /etc/ganesha/ganesha.conf >/dev/null
      sudo -n mkdir -p $EXPORT; sudo -n chmod 1777 $EXPORT
      sudo -n systemctl restart nfs-ganesha
      for i in \$(seq 100); do sudo -n /usr/sbin/showmount -e $STORAGE 2>/dev/null | grep -q '^$EXPORT ' && break; sleep 0.2; done
      sudo -n /usr/sbin/showmount -e $STORAGE" 2>&1) && grep -q "^$EXPORT " <<< "$out"; then
  ok "storage: nfs-ganesha exports $EXPORT (showmount -e $STORAGE)"
else
  bad "storage: nfs-ganesha export: $out"
fi
for h in "${WORKERS[@]}"; do
  f=$TAG-$h.txt
  if out=$(bssh "$(fip_of "$h")" "set -e; echo '$TAG from $h' > /tmp/$f; nfs-cp /tmp/$f nfs://$STORAGE$EXPORT/$f; rm -f /tmp/$f" 2>&1) \
     && back=$(bssh $STORAGE "cat $EXPORT/$f" 2>&1) && [ "$back" = "$TAG from $h" ]; then
    ok "$h wrote $EXPORT/$f with nfs-cp; storage reads it back"
  else
    bad "$h: nfs write/read back: ${out:-} ${back:-}"
  fi
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
