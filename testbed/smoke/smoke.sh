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
#     (kubectl as kubespray runs it there: through sudo, with
#     /etc/kubernetes/admin.conf, which every BED_KUBECONFIG layout has;
#     skipped, and counted as failed, when the bed has no Kubernetes)
#  7. the external load balancer host lb runs haproxy (socat installed) and the
#     Heat stack has its port externalLB_CP at lb's address
#  8. the kubespray stand-in on the ansible host (/opt/kubespray): ansible-playbook
#     --syntax-check of its five playbooks; facts.yml, scale.yml --limit=<spare
#     worker> and remove-node.yml run as heatsible runs them (YAML inventory whose
#     passwords are {{ heatsible_secrets.* }}, -e @secrets, from the root) and
#     write records with the root's ansible.cfg (timeout 37), the limit and the
#     extra vars; scale.yml registers the spare's Node object, remove-node.yml
#     refuses without node / without skip_confirmation and then deletes it
#     (the smoke's records and Node object are removed afterwards)
#
# Checks 1 and 2 include the spare workers (SPARE_WORKERS) and lb.
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
WORKERS=() SPARES=() LBS=()
for ((i = 0; i < BED_WORKERS; i++)); do WORKERS+=("worker-$i"); done
for ((i = BED_WORKERS; i < BED_WORKERS + ${BED_SPARE_WORKERS:-0}; i++)); do SPARES+=("worker-$i"); done
[ -n "${BED_LB:-}" ] && LBS=("$BED_LB")
LB_IP=10.231.0.13
KS=${BED_KUBESPRAY_ROOT:-/opt/kubespray}
KUBECTL="sudo -n kubectl --kubeconfig /etc/kubernetes/admin.conf"   # on master-0, as kubespray runs it
EXPORT=/srv/bed-smoke/nfs
EXPORT_ID=9977
TAG=smoke-$$-$(date +%s)

# logins from this machine run at most SMOKE_PARALLEL (8) at a time: at WORKERS=64,
# 132 password logins at once (about 0.4 CPU-s each here) would all queue on 2 cores
PAR=${SMOKE_PARALLEL:-8}
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$PAR" ]; do wait -n || true; done; }

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
ip_of()  { case $1 in ansible) echo $ANSIBLE ;; storage) echo $STORAGE ;; master-0) echo $MASTER ;; lb) echo $LB_IP ;; worker-*) echo "10.231.0.$((20 + ${1#worker-}))" ;; esac; }
ALL=(ansible storage master-0 "${LBS[@]}" "${WORKERS[@]}" "${SPARES[@]}")

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
    throttle
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
inv+="[bed:vars]\nansible_user=$USER_\nansible_python_interpreter=/usr/bin/python3\n"
cfg="[defaults]\nhost_key_checking = True\ntimeout = 30\nforks = 20\n[ssh_connection]\npipelining = True\n"
# The password is a vars file of its own: an !unsafe YAML string (JSON-quoted by jq),
# so Ansible takes it as typed, whatever it holds (the bed's default is hostile).
pwvars() { printf '%s: !unsafe %s\n' "$1" "$(jq -n --arg p "$BED_PASSWORD" '$p')"; }
t0=$(date +%s)
inv64=$(printf '%b' "$inv" | base64 -w0) cfg64=$(printf '%b' "$cfg" | base64 -w0) pw64=$(pwvars ansible_password | base64 -w0)
# the password goes through stdin (second line), not the command line
if out=$(printf '%s\n%s\n' "$inv64" "$pw64" | bssh $ANSIBLE "set -e; d=\$(mktemp -d); trap 'rm -rf \$d' EXIT; umask 077
      read -r inv; read -r pw; echo \"\$inv\" | base64 -d > \$d/inventory.ini; echo \"\$pw\" | base64 -d > \$d/pw.yml
      echo $cfg64 | base64 -d > \$d/ansible.cfg
      ANSIBLE_CONFIG=\$d/ansible.cfg ansible all -i \$d/inventory.ini -e @\$d/pw.yml -m ping -o" 2>&1); then
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
# the workers write, SMOKE_PARALLEL at a time; storage reads them all back over
# one ssh (sshd's MaxStartups would drop many simultaneous logins to one host)
for h in "${WORKERS[@]}"; do
  f=$TAG-$h.txt
  throttle
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
elif out=$(printf '%s\n' "$manifest" | bssh $MASTER "set -e; kubectl() { sudo -n kubectl --kubeconfig /etc/kubernetes/admin.conf \"\$@\"; }
      kubectl apply -f - >/dev/null
      kubectl wait --for=jsonpath='{.status.phase}'=Available pv/$pv --timeout=60s >/dev/null
      kubectl get pv $pv -o jsonpath='{.status.phase}'; kubectl delete pv $pv --wait=false >/dev/null" 2>&1) \
     && [ "$out" = Available ]; then
  ok "master-0: kubectl created PV $pv (nfs $STORAGE:$EXPORT); it went Available"
else
  bad "master-0: PV $pv: $out"
  bssh $MASTER "$KUBECTL delete pv $pv --ignore-not-found --wait=false" >/dev/null 2>&1 || true
fi

# ---------------------------------------------------------------- 7. the external load balancer
if [ ${#LBS[@]} -gt 0 ]; then
  if out=$(bssh $LB_IP 'systemctl is-active haproxy; /usr/sbin/haproxy -v | head -1; command -v socat' 2>&1) \
     && [ "$(head -1 <<< "$out")" = active ] && grep -q '^HAProxy version' <<< "$out" && grep -q socat <<< "$out"; then
    ok "lb ($LB_IP): haproxy running ($(sed -n 2p <<< "$out" | cut -d' ' -f1-3)), socat installed"
  else
    bad "lb ($LB_IP): haproxy/socat: $out"
  fi
  sj=$RUN/heat/stack.json
  if [ ! -s "$sj" ]; then
    info "no Heat stack.json: externalLB_CP not checked"
  elif [ "$(jq -r '.ports[] | select(.resource == "externalLB_CP") | .ip' "$sj")" = $LB_IP ]; then
    ok "heat: stack $(jq -r .name "$sj") has externalLB_CP at $LB_IP"
  else
    bad "heat: stack.json has no port externalLB_CP at $LB_IP"
  fi
else
  info "no external load balancer (EXTERNAL_LB=0)"
fi

# ---------------------------------------------------------------- 8. the kubespray stand-in
# On the ansible host, as the bed user, from the stand-in's root, with an inventory
# shaped like the one heatsible writes (passwords only through -e @secrets).
spare=${SPARES[0]:-}
ks_inv() {
  local h
  echo "all:"; echo "  hosts:"
  echo "    master-0: {ansible_host: $MASTER, ansible_user: $USER_}"
  for h in "${WORKERS[@]}" "${SPARES[@]}"; do echo "    $h: {ansible_host: $(fip_of "$h"), ansible_user: $USER_}"; done
  echo "  vars:"
  echo "    ansible_password: '{{ heatsible_secrets.smoke_password }}'"
  echo "    ansible_become_password: '{{ heatsible_secrets.smoke_password }}'"
  echo "    ansible_python_interpreter: /usr/bin/python3"
  echo "  children:"
  echo "    kube_control_plane: {hosts: {master-0: {}}}"
  echo "    etcd: {hosts: {master-0: {}}}"
  printf '    kube_node: {hosts: {'; for h in "${WORKERS[@]}" "${SPARES[@]}"; do printf '%s: {}, ' "$h"; done | sed 's/, $//'; echo '}}'
  echo "    calico_rr: {hosts: {}}"
  echo "    k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}, calico_rr: {}}}"
}
# ks PLAYBOOK ARGS...: run it; prints its failures and recap, "rc=N" and the newest record (JSON, one line)
ks() {
  bssh $ANSIBLE "cd $KS && ansible-playbook -i $KSD/hosts.yaml -e @$KSD/secrets.yaml $* 2>&1 | grep -E 'FAILED!|UNREACHABLE!|ERROR|: ok='; echo rc=\${PIPESTATUS[0]}
    f=\$(ls -1 records | grep -E '^[0-9]+-.*[.]json\$' | sort -n | tail -1); [ -n \"\$f\" ] && python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' records/\$f" 2>&1
}
rc_of() { sed -n 's/^rc=//p' <<< "$1" | tail -1; }
rec_of() { tail -1 <<< "$1"; }
if ! bssh $ANSIBLE "test -f $KS/ansible.cfg -a -w $KS/records"; then
  bad "kubespray stand-in: no $KS/ansible.cfg or $KS/records not writable by $USER_ on the ansible host"
elif [ -z "$spare" ]; then
  info "no spare worker (SPARE_WORKERS=0): kubespray stand-in not checked"
else
  t0=$(date +%s)
  KSD=$(printf 'heatsible_secrets:\n  %s' "$(pwvars smoke_password)" | base64 -w0 | bssh $ANSIBLE "set -e; umask 077
    d=\$(mktemp -d $KS/inventory/smoke-XXXXXX); base64 -d > \$d/secrets.yaml; echo $(ks_inv | base64 -w0) | base64 -d > \$d/hosts.yaml
    ls -1 $KS/records | grep -E '^[0-9]+-.*[.]json\$' | sort -n | tail -1 | sed 's/-.*//' > \$d/first; echo \$d")
  ks_cleanup() { # the smoke's records (seq above the one noted), its inventory, its Node object
    bssh $ANSIBLE "cd $KS/records && first=\$(cat $KSD/first 2>/dev/null); for f in [0-9]*-*.json; do
        [ -f \"\$f\" ] && [ \$((10#\${f%%-*})) -gt \$((10#\${first:-0})) ] && rm -f \"\$f\"; done; rm -rf $KSD" >/dev/null 2>&1 || true
    bssh $MASTER "$KUBECTL delete node $spare --ignore-not-found" >/dev/null 2>&1 || true
  }
  if out=$(bssh $ANSIBLE "cd $KS && ansible-playbook --syntax-check -i $KSD/hosts.yaml cluster.yml facts.yml scale.yml remove-node.yml reset.yml" 2>&1); then
    ok "kubespray stand-in: ansible-playbook --syntax-check of cluster.yml facts.yml scale.yml remove-node.yml reset.yml in $KS"
  else
    bad "kubespray stand-in: --syntax-check: $(tail -5 <<< "$out")"
  fi
  out=$(ks facts.yml)
  # The record may name the secrets' keys (the stand-in lists them); never
  # their value: the password's first word (its random part) appears in any
  # escaping of it.
  if [ "$(rc_of "$out")" = 0 ] && jq -e --arg ks "$KS" --arg pw "${BED_PASSWORD%% *}" --argjson n $(( 1 + ${#WORKERS[@]} + ${#SPARES[@]} )) '
       .playbook == "facts.yml" and .config_timeout == 37 and .config_file == ($ks + "/ansible.cfg") and .cwd == $ks
       and .ansible_limit == null and (.play_hosts | length) == $n and .groups.kube_control_plane == ["master-0"]
       and .hosts["master-0"].ansible_host != null and ($pw | length) >= 8 and (tostring | contains($pw) | not)' <<< "$(rec_of "$out")" >/dev/null; then
    ok "kubespray stand-in: facts.yml reached every host; record $(jq -r '"\(.seq)-facts.json: cwd \(.cwd), timeout \(.config_timeout)"' <<< "$(rec_of "$out")")"
  else
    bad "kubespray stand-in: facts.yml: $out"
  fi
  out=$(ks scale.yml --limit="$spare")
  if [ "$(rc_of "$out")" = 0 ] && jq -e --arg s "$spare" '.playbook == "scale.yml" and .ansible_limit == $s and .play_hosts == [$s]' \
       <<< "$(rec_of "$out")" >/dev/null \
     && [ "$(bssh $MASTER "$KUBECTL get node $spare -o jsonpath='{.metadata.labels.heatsible\.test/stand-in}'" 2>&1)" = kubespray ]; then
    ok "kubespray stand-in: scale.yml --limit=$spare recorded the limit and registered Node $spare (label heatsible.test/stand-in=kubespray)"
  else
    bad "kubespray stand-in: scale.yml --limit=$spare: $out"
  fi
  out=$(ks remove-node.yml)
  if [ "$(rc_of "$out")" != 0 ] && grep -q 'no node given' <<< "$out" && jq -e '.extra_vars.node == null' <<< "$(rec_of "$out")" >/dev/null; then
    ok "kubespray stand-in: remove-node.yml without -e node fails (\"no node given\")"
  else
    bad "kubespray stand-in: remove-node.yml without node: $out"
  fi
  out=$(ks remove-node.yml -e node="$spare")
  if [ "$(rc_of "$out")" != 0 ] && grep -q 'would prompt' <<< "$out"; then
    ok "kubespray stand-in: remove-node.yml without skip_confirmation fails (\"would prompt\")"
  else
    bad "kubespray stand-in: remove-node.yml without skip_confirmation: $out"
  fi
  # reset_nodes=false: the stand-in's reset mark on the spare (maybe left by an earlier run) must not change
  mark() { bssh "$(fip_of "$spare")" 'stat -c %y /var/lib/kubespray-stand-in/reset 2>/dev/null || echo none' 2>&1; }
  mark0=$(mark)
  out=$(ks remove-node.yml -e node="$spare" -e skip_confirmation=true -e reset_nodes=false)
  if [ "$(rc_of "$out")" = 0 ] && jq -e --arg s "$spare" '.extra_vars == {node: $s, skip_confirmation: "true", reset_nodes: "false", allow_ungraceful_removal: null}' \
       <<< "$(rec_of "$out")" >/dev/null \
     && [ -z "$(bssh $MASTER "$KUBECTL get node $spare --ignore-not-found -o name" 2>&1)" ] \
     && [ "$(mark)" = "$mark0" ]; then
    ok "kubespray stand-in: remove-node.yml -e node=$spare -e skip_confirmation=true -e reset_nodes=false deleted Node $spare, left the host alone ($(( $(date +%s) - t0 ))s for check 8)"
  else
    bad "kubespray stand-in: remove-node.yml -e node=$spare: $out"
  fi
  ks_cleanup
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
