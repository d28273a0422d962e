#!/usr/bin/env bash
# baseline.sh - the sequential reference for `make bench`: instantiate-end done
# the way Tacker's MgmtDriver samples do it, one SSH session per host, one host
# after the other, from this machine (where Tacker would run).
#
# It does the same work as heatsible's roles, with the same safety:
#   storage (one session, `sudo bash`):
#     - NFS server packages (nfs-ganesha, nfs-ganesha-vfs, libnfs-utils, as
#       roles/nfs_server for nfs_server_impl "ganesha"): dpkg-query; apt-get
#       install only what is missing, apt-get update first only if the index
#       is older than 3600 s (the roles' apt_cache_valid_time);
#     - each volume: /dev/disk/by-id/virtio-<id[:20]> if it is a block device,
#       else Heat's device; `blkid -p`: mkfs.ext4 only when it finds nothing
#       (rc 2), refuse any signature that is not ext4/ext3/ext2/xfs/btrfs;
#       fstab line `UUID=... ` when `blkid -U` resolves it, else the device;
#       mount unless mounted;
#     - export directories: created nobody:nogroup 0777 when missing, refused
#       when not under a volume;
#     - /etc/ganesha/ganesha.conf written whole (same exports, Export_Ids,
#       clients and squash as the role's template, the server's own address
#       added as a client), only when it differs; nfs-server stopped and
#       disabled; nfs-ganesha enabled, started, restarted if the file changed;
#     - verified like the role: port 2049 open, `showmount -e` lists every
#       export for every client, `nfs-ls` lists every export over NFSv3 and v4;
#   every worker, then the master (one session each, `sudo bash` for the
#   packages): nfs-common via dpkg-query / apt-get as above, /sbin/mount.nfs
#   present;
#   master, same session: each PV manifest with spec.nfs.server set to the
#   storage CP's address and the managed-by label (edited as YAML on this
#   machine), `kubectl apply -f` each, then poll every 1 s (the role: 5 s)
#   until all are Available or Bound (at most 120 s). kubectl reads the admin
#   kubeconfig where the cluster's installer left it, looked for in
#   heatsible's order (roles/kubeconfig): the SSH user's ~/.kube/config
#   (kubeadm scripts such as Tacker's), else, through sudo,
#   /etc/kubernetes/admin.conf or /root/.kube/config (kubespray, which leaves
#   the SSH user none: the bed's default layout).
#
# What it does NOT do (each of these only makes it faster than heatsible):
# no Heat discovery (addresses, volume ids and devices come from the bed's
# testbed/run/topology.yaml; heatsible reads the stack), no run bundle, no
# upload to the Ansible host, no run record, no lock, no check mode, no
# per-task reporting; ganesha is started once (the role starts it, then its
# handler restarts it when the config was new); the script is not a
# general tool: it reads the bed's outputs and needs the bed's request shape.
#
# Host keys are verified against testbed/run/known_hosts; the password goes to
# sshpass through its environment (SSHPASS), never argv. No ControlMaster: every
# host gets its own fresh connection.
#
# Usage: bench/baseline.sh [--print]  (as root, after testbed/bin/bed up;
#        --print shows the host list and the scripts and runs nothing)
# Prints "host NAME SECONDS" per host and "total SECONDS"; exit 1 on any failure.
# shellcheck disable=SC2016  # the remote scripts are single-quoted on purpose
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
RUN=${BENCH_RUN:-$ROOT/testbed/run}
for f in topology.yaml request.json known_hosts package; do
  [ -e "$RUN/$f" ] || { echo "baseline: $RUN/$f is missing: bring the bed up first (testbed/bin/bed up)" >&2; exit 2; }
done
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
T0=$(now)

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------- read the bed's request and topology
python3 - "$RUN" "$tmp" <<'PY'
import hashlib, json, os, sys, yaml
run, out = sys.argv[1], sys.argv[2]
topo = yaml.safe_load(open(os.path.join(run, "topology.yaml")))
req = json.load(open(os.path.join(run, "request.json")))
k = req.get("additionalParams", req)["k8s_cluster_installation_param"]
ss = k["storage_server"]
nodes = topo["nodes"]
storage = [n for n in nodes if n["role"] == "storage"][0]
masters = [n for n in nodes if n["role"] == "master"]
workers = [n for n in nodes if n["role"] == "worker"]
vols = {v["resource"]: v for v in topo.get("volumes", [])}
bind = storage["address"]
with open(os.path.join(out, "hosts"), "w") as f:
    # order: storage, every worker, the master last (it also registers the PVs)
    f.write("storage %s %s %s\n" % (storage["name"], storage["ssh_address"], ss["username"]))
    for n in workers:
        f.write("worker %s %s %s\n" % (n["name"], n["ssh_address"], k["worker_node"]["username"]))
    for i, n in enumerate(masters):
        f.write("%s %s %s %s\n" % ("master" if i == 0 else "worker", n["name"], n["ssh_address"], k["master_node"]["username"]))
with open(os.path.join(out, "passwords"), "w") as f:
    os.fchmod(f.fileno(), 0o600)
    json.dump({"storage": ss["password"], "worker": k["worker_node"]["password"], "master": k["master_node"]["password"]}, f)
with open(os.path.join(out, "volumes"), "w") as f:
    for v in ss.get("cinder_volume_setup_params", []):
        t = vols[v["volume_resource_id"]]
        f.write("%s %s %s\n" % (t.get("id", ""), t.get("device", "") or "-", v["mount_to"]))
# exports: one per dir, clients in request order plus the server itself (as the role)
table = {}
for e in ss.get("nfs_server_setup_params", []):
    opts = [o.strip() for o in (e.get("export_options") or "rw,sync,no_subtree_check,no_root_squash").split(",") if o.strip()]
    table.setdefault(e["export_dir"], []).append((e["export_to"], opts))
conf = ["# Written by bench/baseline.sh (the sequential reference).",
        "NFS_CORE_PARAM {", "    Protocols = 3, 4;", "    Bind_Addr = %s;" % bind, "}", "",
        "NFSV4 {", "    Graceless = true;", "}"]
with open(os.path.join(out, "exports"), "w") as f:
    for d, clients in table.items():
        if bind not in [c[0] for c in clients]:
            clients.append((bind, clients[0][1]))
        eid = int(hashlib.sha1(d.encode()).hexdigest()[:8], 16) % 65534 + 1
        conf += ["", "EXPORT {", "    Export_Id = %d;" % eid, '    Path = "%s";' % d, '    Pseudo = "%s";' % d,
                 "    Protocols = 3, 4;", "    Transports = TCP;", "    SecType = sys;", "    Access_Type = None;",
                 "    Squash = Root_Squash;", "    FSAL {", "        Name = VFS;", "    }"]
        for to, o in clients:
            sq = "All_Squash" if "all_squash" in o else ("No_Root_Squash" if "no_root_squash" in o else "Root_Squash")
            conf += ["    CLIENT {", "        Clients = %s;" % to, "        Access_Type = %s;" % ("RO" if "ro" in o else "RW"),
                     "        Squash = %s;" % sq, "    }"]
            f.write("%s %s\n" % (d, to))
        conf.append("}")
    conf += ["", "LOG {", "    Default_Log_Level = EVENT;", "}"]
open(os.path.join(out, "ganesha.conf"), "w").write("\n".join(conf) + "\n")
with open(os.path.join(out, "bind"), "w") as f:
    f.write(bind + "\n")
# PV manifests: spec.nfs.server = the CP's address, the managed-by label
os.mkdir(os.path.join(out, "pvs"))
with open(os.path.join(out, "pvnames"), "w") as names:
    for reg in k.get("pv_registration_params", []):
        pv = yaml.safe_load(open(os.path.join(run, "package", reg["pv_manifest_file_path"])))
        if "nfs" in pv.get("spec", {}):
            pv["spec"]["nfs"]["server"] = topo["cps"][reg["nfs_server_cp"]]
        pv["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "heatsible"
        name = pv["metadata"]["name"]
        yaml.safe_dump(pv, open(os.path.join(out, "pvs", name + ".yaml"), "w"))
        names.write(name + "\n")
PY

pw() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/passwords" "$1"; }

# ---------------------------------------------------------------- the per-host scripts
# Package check shared by every host: install only what dpkg lacks; refresh
# the index first only when it is older than an hour.
pkg_fn='
ensure_pkgs() {
  local missing=() p stamp
  for p in "$@"; do
    [ "$(dpkg-query -W -f="\${db:Status-Status}" "$p" 2>/dev/null)" = installed ] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  stamp=/var/lib/apt/periodic/update-success-stamp; [ -e $stamp ] || stamp=/var/lib/apt/lists
  if [ $(( $(date +%s) - $(stat -c %Y $stamp) )) -gt 3600 ]; then apt-get -q update </dev/null; fi
  DEBIAN_FRONTEND=noninteractive apt-get -y -q install "${missing[@]}" </dev/null
}'

{
  echo 'set -euo pipefail'
  echo "$pkg_fn"
  echo "BIND=$(cat "$tmp/bind")"
  echo 'ensure_pkgs nfs-ganesha nfs-ganesha-vfs libnfs-utils'
  cat <<'EOF'
mounts=()
vol() { # ID HEATDEV MOUNT_TO
  local id=$1 heat=$2 mnt=$3 dev="" rc=0 type uuid src line
  if [ -n "$id" ] && [ -b "/dev/disk/by-id/virtio-${id:0:20}" ]; then dev=/dev/disk/by-id/virtio-${id:0:20}
  elif [ "$heat" != - ] && [ -b "$heat" ]; then dev=$heat
  else echo "no block device for volume $id ($heat)" >&2; exit 1; fi
  type=$(blkid -p -o value -s TYPE "$dev") || rc=$?
  case $rc in
    2) mkfs.ext4 -q "$dev" </dev/null; type=ext4 ;;
    0) case " ext4 ext3 ext2 xfs btrfs " in *" $type "*) ;; *) echo "$dev holds '$type': refusing to touch it" >&2; exit 1 ;; esac ;;
    *) echo "blkid -p $dev: rc $rc" >&2; exit 1 ;;
  esac
  uuid=$(blkid -p -o value -s UUID "$dev")
  src=$dev; if [ -n "$uuid" ] && blkid -U "$uuid" >/dev/null 2>&1; then src=UUID=$uuid; fi
  line="$src $mnt $type defaults,nofail 0 2"
  if ! grep -qxF "$line" /etc/fstab; then
    awk -v m="$mnt" '$1 ~ /^#/ || $2 != m' /etc/fstab > /etc/fstab.bench && echo "$line" >> /etc/fstab.bench
    cat /etc/fstab.bench > /etc/fstab && rm -f /etc/fstab.bench
  fi
  mkdir -p "$mnt"
  findmnt --mountpoint "$mnt" >/dev/null || mount "$mnt"
  mounts+=("$mnt")
}
EOF
  while read -r id dev mnt; do printf 'vol %q %q %q\n' "$id" "$dev" "$mnt"; done < "$tmp/volumes"
  cat <<'EOF'
export_dir() {
  local d=$1 m ok=""
  for m in "${mounts[@]}"; do case $d/ in "$m"/*) ok=1 ;; esac; done
  [ -n "$ok" ] || { echo "$d is not under a volume" >&2; exit 1; }
  if [ ! -e "$d" ]; then mkdir -p "$d"; chown nobody:nogroup "$d"; chmod 0777 "$d"
  elif [ ! -d "$d" ]; then echo "$d is not a directory" >&2; exit 1; fi
}
EOF
  cut -d' ' -f1 "$tmp/exports" | sort -u | while read -r d; do printf 'export_dir %q\n' "$d"; done
  echo "cat > /etc/ganesha/ganesha.conf.bench <<'CONF'"; cat "$tmp/ganesha.conf"; echo CONF
  cat <<'EOF'
changed=""
if cmp -s /etc/ganesha/ganesha.conf.bench /etc/ganesha/ganesha.conf; then rm -f /etc/ganesha/ganesha.conf.bench
else chmod 0644 /etc/ganesha/ganesha.conf.bench; mv /etc/ganesha/ganesha.conf.bench /etc/ganesha/ganesha.conf; changed=1; fi
if [ -n "$(systemctl list-unit-files --no-legend nfs-server.service)" ]; then
  systemctl is-active -q nfs-server && systemctl stop nfs-server
  systemctl is-enabled -q nfs-server && systemctl disable -q nfs-server
fi
systemctl is-enabled -q nfs-ganesha || systemctl enable -q nfs-ganesha
if ! systemctl is-active -q nfs-ganesha; then systemctl start nfs-ganesha
elif [ -n "$changed" ]; then systemctl restart nfs-ganesha; fi
# verify: the port, the MOUNT service's list, every export over NFSv3 and v4
for i in $(seq 30); do (exec 3<>"/dev/tcp/$BIND/2049") 2>/dev/null && break; sleep 1; done
(exec 3<>"/dev/tcp/$BIND/2049") 2>/dev/null || { echo "nothing listens on $BIND:2049" >&2; exit 1; }
for i in $(seq 10); do list=$(showmount -e "$BIND" 2>/dev/null) && break; sleep 3; done
[ -n "${list:-}" ] || { echo "showmount -e $BIND failed" >&2; exit 1; }
chk() { # DIR TO
  grep -qE "^$1[[:space:]]+(.*,)?$2(/32|/128)?(,|[[:space:]]|\$)" <<< "$list" || { echo "showmount does not list $1 for $2:" >&2; echo "$list" >&2; exit 1; }
}
ls_nfs() { # DIR
  local v i
  for v in 3 4; do
    for i in $(seq 10); do nfs-ls "nfs://$BIND$1?version=$v" >/dev/null 2>&1 && continue 2; sleep 3; done
    echo "nfs-ls nfs://$BIND$1 (NFSv$v) failed" >&2; exit 1
  done
}
EOF
  while read -r d to; do printf 'chk %q %q\n' "$d" "$to"; done < "$tmp/exports"
  cut -d' ' -f1 "$tmp/exports" | sort -u | while read -r d; do printf 'ls_nfs %q\n' "$d"; done
  echo 'echo storage done'
} > "$tmp/storage.sh"

{
  echo 'set -euo pipefail'
  echo "$pkg_fn"
  echo 'ensure_pkgs nfs-common'
  echo 'test -e /sbin/mount.nfs || { echo "/sbin/mount.nfs is missing" >&2; exit 1; }'
} > "$tmp/client.sh"

# master: the client part under sudo, then the PVs with the admin kubeconfig
{
  echo 'set -euo pipefail'
  echo "sudo -n bash <<'CLIENT'"; cat "$tmp/client.sh"; echo CLIENT
  cat <<'EOF'
if [ -r "$HOME/.kube/config" ]; then kubectl() { command kubectl --kubeconfig "$HOME/.kube/config" "$@"; }
elif sudo -n test -f /etc/kubernetes/admin.conf; then kubectl() { sudo -n kubectl --kubeconfig /etc/kubernetes/admin.conf "$@"; }
elif sudo -n test -f /root/.kube/config; then kubectl() { sudo -n kubectl --kubeconfig /root/.kube/config "$@"; }
else echo "no admin kubeconfig: not ~/.kube/config, /etc/kubernetes/admin.conf nor /root/.kube/config" >&2; exit 1; fi
EOF
  echo 'd=$(mktemp -d); trap '\''rm -rf "$d"'\'' EXIT'
  while read -r name; do
    echo "cat > \"\$d/$name.yaml\" <<'PV'"; cat "$tmp/pvs/$name.yaml"; echo PV
    echo "kubectl apply -f \"\$d/$name.yaml\" </dev/null"
  done < "$tmp/pvnames"
  printf 'names=(%s)\n' "$(tr '\n' ' ' < "$tmp/pvnames")"
  cat <<'EOF'
[ ${#names[@]} -eq 0 ] && exit 0
for i in $(seq 120); do
  phases=$(kubectl get pv "${names[@]}" --no-headers -o custom-columns=P:.status.phase </dev/null 2>/dev/null || true)
  if [ "$(grep -cxE 'Available|Bound' <<< "$phases")" = ${#names[@]} ]; then echo "PVs ready"; exit 0; fi
  sleep 1
done
echo "PVs not Available after 120 s: $phases" >&2; exit 1
EOF
} > "$tmp/master.sh"

if [ "${1:-}" = --print ]; then # show what would run, run nothing
  for f in hosts storage.sh client.sh master.sh; do echo "==== $f"; cat "$tmp/$f"; done
  exit 0
fi

# ---------------------------------------------------------------- one host after the other
# ssh HOST USER SCRIPT ROOT?: copy the script over this session's stdin and run it.
run_on() {
  local addr=$1 user=$2 script=$3 sudo=$4
  local cmd='f=$(mktemp); cat > "$f"; '"$sudo"' bash "$f" </dev/null; rc=$?; rm -f "$f"; exit $rc'
  sshpass -e ssh -o UserKnownHostsFile="$RUN/known_hosts" -o GlobalKnownHostsFile=/dev/null \
    -o StrictHostKeyChecking=yes -o ControlMaster=no -o ControlPath=none -o LogLevel=ERROR \
    -o ConnectTimeout=30 -o PubkeyAuthentication=no -o PreferredAuthentications=password \
    "$user@$addr" "$cmd" < "$script"
}

hosts=0
while read -r kind name addr user; do
  t=$(now)
  case $kind in
    storage) SSHPASS=$(pw storage) run_on "$addr" "$user" "$tmp/storage.sh" "sudo -n" ;;
    worker)  SSHPASS=$(pw worker) run_on "$addr" "$user" "$tmp/client.sh" "sudo -n" ;;
    master)  SSHPASS=$(pw master) run_on "$addr" "$user" "$tmp/master.sh" "" ;;
  esac > "$tmp/out" 2>&1 || { echo "baseline: $name ($addr) failed:" >&2; cat "$tmp/out" >&2; exit 1; }
  echo "host $name $(since "$t")"
  hosts=$((hosts + 1))
done < "$tmp/hosts"
echo "total $(since "$T0") ($hosts hosts)"
