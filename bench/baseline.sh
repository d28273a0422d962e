#!/usr/bin/env bash
# baseline.sh - the sequential reference for `make bench`: instantiate-end done
# the way Tacker's MgmtDriver samples do it, one SSH session per host, one host
# after the other, from this machine (where Tacker would run).
#
# It does the same work as heatsible's roles, with the same safety (one
# exception: below), so that a heatsible run right after it finds nothing to
# change on the hosts:
#   storage (one session, `sudo bash`):
#     - NFS server packages (nfs-ganesha, nfs-ganesha-vfs, libnfs-utils, as
#       roles/nfs_server for nfs_server_impl "ganesha"): dpkg-query; apt-get
#       install only what is missing, apt-get update first only if the index
#       is older than 3600 s (the roles' apt_cache_valid_time);
#     - each volume: /dev/disk/by-id/virtio-<id[:20]> if it is a block device,
#       else Heat's device; `blkid -p`: mkfs.ext4 only when it finds nothing
#       (rc 2), refuse any signature that is not ext4/ext3/ext2/xfs/btrfs;
#       the file systems of the volumes found by id recorded in
#       /var/lib/heatsible/volumes.json (cinder_volume's record, the same
#       JSON, other volumes' entries kept; written only when it differs,
#       before mounting); fstab line `UUID=... ` when `blkid -U` resolves it,
#       else the device; mount unless mounted;
#     - export directories: created nobody:nogroup 0777 when missing, refused
#       when not under a volume;
#     - the files roles/nfs_server writes whole, with the text the role
#       renders (byte for byte; root:root 0644), each only when it differs:
#       /etc/ganesha/ganesha.conf (the same exports, Export_Ids, clients and
#       squash, the server's own address added as a client, MOUNT and NLM on
#       the pinned ports), the drop-ins
#       /etc/systemd/system/{nfs-server,nfs-ganesha}.service.d/
#       heatsible-mounts.conf (RequiresMountsFor= and ExecStartPre=mountpoint
#       for the volumes that hold exports) and /etc/nfs.conf.d/zz-heatsible.conf
#       (the NFSv3 side ports); /var/lib/heatsible/nfs_server.pending written
#       before the first of them and removed once the daemons have them (a
#       mark found at the start is applied, as the role does);
#     - nfs-server and rpc-statd stopped and disabled when present and
#       running or enabled; after a drop-in or the ports changed, one
#       `systemctl daemon-reload` (as the role); nfs-ganesha enabled and
#       started; after a drop-in or the ports changed, nfs-ganesha-lock
#       (ganesha's rpc.statd) restarted unless starting ganesha has just
#       started it (as the role); nfs-ganesha restarted if it was already
#       running and anything changed (as the role);
#     - verified like the role: port 2049 open, `showmount -e` lists every
#       export for every client, `nfs-ls` lists every export over NFSv3 and v4;
#   every worker, then the master (one session each, `sudo bash` for the
#   packages): nfs-common via dpkg-query / apt-get as above, /sbin/mount.nfs
#   present;
#   master, same session: each PV manifest with spec.nfs.server set to the
#   storage CP's address and the managed-by label (edited as YAML on this
#   machine), `kubectl apply -f` each, then poll every 1 s (the role: 2 s)
#   until all are Available or Bound (at most 120 s); then Tacker's VIM as
#   roles/k8s_vim: `kubectl apply` of the same three objects with the same
#   labels (ServiceAccount kube-system/heatsible-tacker-vim, its
#   ClusterRoleBinding to cluster-admin, the service-account-token Secret
#   heatsible-tacker-vim-token), then python3 polls every 1 s (the role: 2 s;
#   at most 60 s) until the Secret has a token and CA for the ServiceAccount's
#   uid, and reads the kubeconfig's server URL and the certificate the API
#   server presents at master_node.cluster_cp_name's address (not verified,
#   as the role). The token comes back over the session in one line that
#   this script keeps in a 0600 file of its temporary directory and never
#   prints (the log shows the ServiceAccount's uid and where the certificate
#   came from). kubectl reads the admin kubeconfig where the cluster's
#   installer left it, looked for in heatsible's order (roles/kubeconfig):
#   the SSH user's ~/.kube/config (kubeadm scripts such as Tacker's), else,
#   through sudo, /etc/kubernetes/admin.conf or /root/.kube/config
#   (kubespray, which leaves the SSH user none: the bed's default layout).
#
# What it does NOT do (each of these only makes it faster than heatsible):
# no Heat discovery (addresses, volume ids and devices come from the bed's
# testbed/run/topology.yaml; heatsible reads the stack), no run bundle, no
# upload to the Ansible host, no run record, no lock, no check mode, no
# per-task reporting, no probes before acting (it compares and writes in one
# pass); it does not check the VIM's
# certificate against the CA nor build the VIM object (heatsible does, on
# its machine), and it reads the certificate at the endpoint only (no
# fallback to the kubeconfig's URL); a volume found only by Heat's device
# name is used and not recorded (the role refuses it unless a record or
# volume_identification says it is the volume); the script is not a
# general tool: it reads the bed's outputs and needs the bed's request
# shape, and the role defaults it copies (pinned ports, VIM names).
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
    opts = [o.strip() for o in (e.get("export_options") or "rw,sync,no_subtree_check,root_squash").split(",") if o.strip()]
    table.setdefault(e["export_dir"], []).append((e["export_to"], opts))
# The files nfs_server writes whole, with the text the role renders for this
# request (templates/ganesha.conf.j2 and collection/plugins/filter/nfs_server.py with the
# role's defaults: ports pinned, graceless, log level EVENT), so that
# heatsible finds them current after the baseline and the other way round.
ports = {"mountd": 20048, "statd": 32765, "statd_outgoing": 32766, "lockd": 32768}
conf = ["# Ansible managed",
        "# Managed by heatsible (role nfs_server): rewritten as a whole on every run,",
        "# manual edits are lost. Change nfs_exports / nfs_export_options instead.",
        "NFS_CORE_PARAM {", "    Protocols = 3, 4;", "    # serve on the storage server's internal address only",
        "    Bind_Addr = %s;" % bind, "    # NFSv3's MOUNT and NLM on fixed ports (security groups; README.md)",
        "    MNT_Port = %d;" % ports["mountd"], "    NLM_Port = %d;" % ports["lockd"], "}", "",
        "NFSV4 {", "    # true: no grace period (60-90 s without service) after each (re)start",
        "    Graceless = true;", "}"]
with open(os.path.join(out, "exports"), "w") as f:
    for d, clients in table.items():
        if bind not in [c[0] for c in clients]:
            clients.append((bind, clients[0][1]))
        eid = int(hashlib.sha1(d.encode()).hexdigest()[:8], 16) % 65534 + 1
        conf += ["", "EXPORT {", "    Export_Id = %d;" % eid, '    Path = "%s";' % d, '    Pseudo = "%s";' % d,
                 "    Protocols = 3, 4;", "    Transports = TCP;", "    SecType = sys;",
                 "    # nobody but the clients listed below", "    Access_Type = None;",
                 "    Squash = Root_Squash;", "    FSAL {", "        Name = VFS;", "    }"]
        for to, o in clients:
            sq = "All_Squash" if "all_squash" in o else ("No_Root_Squash" if "no_root_squash" in o else "Root_Squash")
            conf += ["    CLIENT {", "        Clients = %s;" % to, "        Access_Type = %s;" % ("RO" if "ro" in o else "RW"),
                     "        Squash = %s;" % sq, "    }"]
            f.write("%s %s\n" % (d, to))
        conf.append("}")
    conf += ["", "LOG {", "    Default_Log_Level = EVENT;", "}"]
open(os.path.join(out, "ganesha.conf"), "w").write("\n".join(conf) + "\n")
# the volume mount points that hold exports (the longest mount_to above each
# export directory): both NFS units require them (the role's drop-in)
mounts = [v["mount_to"] for v in ss.get("cinder_volume_setup_params", [])]
def under(d):
    best = ""
    for m in mounts:
        if (d == m or d.startswith(m.rstrip("/") + "/")) and len(m) > len(best):
            best = m
    return best
mps = sorted({under(d) for d in table} - {""})
dropin = ["# Managed by heatsible (role nfs_server). The exports live on these volume",
          "# mount points: the NFS server starts only once they are mounted (with",
          "# fstab's nofail, a boot without a volume would otherwise serve the empty",
          "# directory on the root disk).", "[Unit]"]
if mps:
    dropin += ["RequiresMountsFor=" + " ".join(mps), "", "[Service]",
               "# RequiresMountsFor= only pulls in mount units systemd knows from fstab;",
               "# this refuses to start on the bare directory in any case."]
    dropin += ["ExecStartPre=/bin/mountpoint -q " + m for m in mps]
open(os.path.join(out, "dropin.conf"), "w").write("\n".join(dropin) + "\n")
open(os.path.join(out, "nfs.conf"), "w").write("\n".join([
    "# Managed by heatsible (role nfs_server): NFSv3's side services on fixed",
    "# ports, so that security groups can let them through (README.md).",
    "[mountd]", "port = %d" % ports["mountd"], "",
    "[statd]", "port = %d" % ports["statd"], "outgoing-port = %d" % ports["statd_outgoing"], "",
    "[lockd]", "port = %d" % ports["lockd"], "udp-port = %d" % ports["lockd"], ""]))
# Tacker's VIM (roles/k8s_vim/vars/main.yml, defaults): the three objects,
# JSON documents in one YAML stream, and where Tacker reaches the API server
# (master_node.cluster_cp_name's address, else the first master's; the port
# is the admin kubeconfig's: heatsible's vimEndpoint without an LB script
# that fronts the API server)
labels = {"app.kubernetes.io/managed-by": "heatsible"}
sa, ns = "heatsible-tacker-vim", "kube-system"
vim = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns, "labels": labels}},
       {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "heatsible-tacker-vim", "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]},
       {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "heatsible-tacker-vim-token", "namespace": ns, "labels": labels,
                     "annotations": {"kubernetes.io/service-account.name": sa}}}]
open(os.path.join(out, "vim.yaml"), "w").write("\n---\n".join(json.dumps(o) for o in vim) + "\n")
cp = (k.get("master_node") or {}).get("cluster_cp_name")
with open(os.path.join(out, "endpoint"), "w") as f:
    f.write("%s\n" % (topo["cps"][cp] if cp else masters[0]["address"]))
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
  installed=1
}'

{
  echo 'set -euo pipefail'
  echo "$pkg_fn"
  echo "BIND=$(cat "$tmp/bind")"
  echo 'ensure_pkgs nfs-ganesha nfs-ganesha-vfs libnfs-utils'
  cat <<'EOF'
# cinder_volume: each volume identified, formatted only when blank, recorded
# (by id), then mounted
mounts=() fstab=() recs=()
vol() { # ID HEATDEV MOUNT_TO
  local id=$1 heat=$2 mnt=$3 dev="" byid="" rc=0 type uuid src
  if [ -n "$id" ] && [ -b "/dev/disk/by-id/virtio-${id:0:20}" ]; then dev=/dev/disk/by-id/virtio-${id:0:20} byid=1
  elif [ "$heat" != - ] && [ -b "$heat" ]; then dev=$heat
  else echo "no block device for volume $id ($heat)" >&2; exit 1; fi
  type=$(blkid -p -o value -s TYPE "$dev") || rc=$?
  case $rc in
    2) mkfs.ext4 -q "$dev" </dev/null; type=ext4 ;;
    0) case " ext4 ext3 ext2 xfs btrfs " in *" $type "*) ;; *) echo "$dev holds '$type': refusing to touch it" >&2; exit 1 ;; esac ;;
    *) echo "blkid -p $dev: rc $rc" >&2; exit 1 ;;
  esac
  uuid=$(blkid -p -o value -s UUID "$dev")
  [ -z "$byid" ] || recs+=("$id" "$uuid" "$type")
  src=$dev; if [ -n "$uuid" ] && blkid -U "$uuid" >/dev/null 2>&1; then src=UUID=$uuid; fi
  mounts+=("$mnt") fstab+=("$src $mnt $type defaults,nofail 0 2")
}
# heatsible's record of the file systems it identified by volume id
# (roles/cinder_volume: /var/lib/heatsible/volumes.json, the same JSON),
# written before mounting, only when it differs; other volumes' entries kept
record() {
  python3 - /var/lib/heatsible/volumes.json "${recs[@]}" <<'PY'
import json, os, sys
p, a = sys.argv[1], sys.argv[2:]
try:
    old = open(p).read()
except FileNotFoundError:
    old = None
doc = json.loads(old) if old else {}
vols = dict(doc.get("volumes") or {})
for i in range(0, len(a), 3):
    vols[a[i]] = {"identified_by": "id", "type": a[i + 2], "uuid": a[i + 1]}
new = json.dumps({"version": 1, "volumes": vols}, indent=4, sort_keys=True) + "\n"
if new != old:
    os.makedirs(os.path.dirname(p), mode=0o755, exist_ok=True)
    with open(p + ".bench", "w") as f:
        f.write(new)
    os.chmod(p + ".bench", 0o644)
    os.replace(p + ".bench", p)
PY
}
mount_vols() {
  local i mnt line
  for i in "${!mounts[@]}"; do
    mnt=${mounts[$i]} line=${fstab[$i]}
    if ! grep -qxF "$line" /etc/fstab; then
      awk -v m="$mnt" '$1 ~ /^#/ || $2 != m' /etc/fstab > /etc/fstab.bench && echo "$line" >> /etc/fstab.bench
      cat /etc/fstab.bench > /etc/fstab && rm -f /etc/fstab.bench
    fi
    mkdir -p "$mnt"
    findmnt --mountpoint "$mnt" >/dev/null || mount "$mnt"
  done
}
EOF
  while read -r id dev mnt; do printf 'vol %q %q %q\n' "$id" "$dev" "$mnt"; done < "$tmp/volumes"
  echo 'record'
  echo 'mount_vols'
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
  # nfs_server: the files it writes whole (root:root 0644), staged first
  echo 'stage=$(mktemp -d); trap '\''rm -rf "$stage"'\'' EXIT'
  for f in ganesha.conf dropin.conf nfs.conf; do
    echo "cat > \"\$stage/$f\" <<'CONF'"; cat "$tmp/$f"; echo CONF
  done
  cat <<'EOF'
pending=/var/lib/heatsible/nfs_server.pending
cfg="" daemon="" stale=()
# a run that wrote and did not apply (its mark left): apply now, as the role
if [ -e "$pending" ]; then cfg=1 daemon=1; fi
for f in ganesha.conf:/etc/ganesha/ganesha.conf dropin.conf:/etc/systemd/system/nfs-server.service.d/heatsible-mounts.conf \
         dropin.conf:/etc/systemd/system/nfs-ganesha.service.d/heatsible-mounts.conf nfs.conf:/etc/nfs.conf.d/zz-heatsible.conf; do
  if ! cmp -s "$stage/${f%%:*}" "${f#*:}" || [ "$(stat -c '%U %G %a' "${f#*:}")" != "root root 644" ]; then stale+=("$f"); fi
done
if [ ${#stale[@]} -gt 0 ]; then
  # the mark before any file is written, removed once the daemons have it
  mkdir -p "${pending%/*}"; echo "written by bench/baseline.sh, not applied yet" > "$pending"
  for f in "${stale[@]}"; do
    dest=${f#*:}
    [ -d "${dest%/*}" ] || install -d -o root -g root -m 0755 "${dest%/*}"
    install -o root -g root -m 0644 "$stage/${f%%:*}" "$dest.bench" && mv "$dest.bench" "$dest"
    case $dest in /etc/ganesha/*) cfg=1 ;; *) daemon=1 ;; esac
  done
fi
# the other server and its statd (port 2049; "Statd service already running!")
systemctl show -p Id,LoadState,ActiveState,UnitFileState nfs-server.service rpc-statd.service | awk -F= '
  $1 == "Id" {id = $2} $1 == "LoadState" {l = $2} $1 == "ActiveState" {a = $2}
  $1 == "UnitFileState" {if (l != "not-found" && !((a == "inactive" || a == "failed") && $2 ~ /^(disabled|masked|static|indirect|)$/)) print id}' |
  while read -r u; do systemctl disable -q --now "$u"; done
[ -z "$daemon" ] || systemctl daemon-reload
systemctl is-enabled -q nfs-ganesha || systemctl enable -q nfs-ganesha
started="" statd_was=""
systemctl is-active -q nfs-ganesha-lock && statd_was=1
if ! systemctl is-active -q nfs-ganesha; then systemctl start nfs-ganesha; started=1; fi
# statd reads its pinned ports when it starts; ganesha its exports and ports.
# As the role: no restart of a statd that was not running and that starting
# ganesha has just started, after the ports were written (and no package
# was installed whose postinst may have started it before).
if [ -n "$daemon" ] && ! { [ -n "$started" ] && [ -z "$statd_was" ] && [ -z "${installed:-}" ]; }; then
  systemctl restart nfs-ganesha-lock
fi
if [ -z "$started" ] && [ -n "$cfg$daemon" ]; then systemctl restart nfs-ganesha; fi
rm -f "$pending"
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

# master: the client part under sudo, then the PVs and Tacker's VIM with the
# admin kubeconfig
{
  echo 'set -euo pipefail'
  echo "sudo -n bash <<'CLIENT'"; cat "$tmp/client.sh"; echo CLIENT
  cat <<'EOF'
if [ -r "$HOME/.kube/config" ]; then KC=(kubectl --kubeconfig "$HOME/.kube/config")
elif sudo -n test -f /etc/kubernetes/admin.conf; then KC=(sudo -n kubectl --kubeconfig /etc/kubernetes/admin.conf)
elif sudo -n test -f /root/.kube/config; then KC=(sudo -n kubectl --kubeconfig /root/.kube/config)
else echo "no admin kubeconfig: not ~/.kube/config, /etc/kubernetes/admin.conf nor /root/.kube/config" >&2; exit 1; fi
kubectl() { "${KC[@]}" "$@"; }
EOF
  echo 'd=$(mktemp -d); trap '\''rm -rf "$d"'\'' EXIT'
  while read -r name; do
    echo "cat > \"\$d/$name.yaml\" <<'PV'"; cat "$tmp/pvs/$name.yaml"; echo PV
    echo "kubectl apply -f \"\$d/$name.yaml\" </dev/null"
  done < "$tmp/pvnames"
  printf 'names=(%s)\n' "$(tr '\n' ' ' < "$tmp/pvnames")"
  cat <<'EOF'
if [ ${#names[@]} -gt 0 ]; then
  for i in $(seq 120); do
    phases=$(kubectl get pv "${names[@]}" --no-headers -o custom-columns=P:.status.phase </dev/null 2>/dev/null || true)
    if [ "$(grep -cxE 'Available|Bound' <<< "$phases")" = ${#names[@]} ]; then echo "PVs ready"; break; fi
    [ "$i" -lt 120 ] || { echo "PVs not Available after 120 s: $phases" >&2; exit 1; }
    sleep 1
  done
fi
EOF
  echo "cat > \"\$d/vim.yaml\" <<'VIM'"; cat "$tmp/vim.yaml"; echo VIM
  echo "EP=$(cat "$tmp/endpoint")"
  cat <<'EOF'
# Tacker's VIM (roles/k8s_vim): the three objects; then, polling every 1 s
# (the role: 2 s) for at most 60 s, the token the token controller puts into
# the Secret for the ServiceAccount as it is now, its CA, the kubeconfig's
# server URL and the certificate the API server presents at the endpoint.
# The token leaves this host only in the one "vim-info" line.
kubectl apply -f "$d/vim.yaml" </dev/null
python3 - "$EP" "${KC[@]}" <<'PY'
import json, socket, ssl, subprocess, sys, time
from urllib.parse import urlsplit
ep, kc = sys.argv[1], sys.argv[2:]
def k(*a):
    return subprocess.run(kc + list(a), check=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout
server = k("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").strip()
for i in range(60):
    try:
        uid = k("-n", "kube-system", "get", "serviceaccount", "heatsible-tacker-vim", "-o", "jsonpath={.metadata.uid}").strip()
        s = json.loads(k("-n", "kube-system", "get", "secret", "heatsible-tacker-vim-token", "-o", "json"))
    except subprocess.CalledProcessError:
        s = {}
    data, meta = s.get("data") or {}, s.get("metadata") or {}
    if data.get("token") and data.get("ca.crt") and \
            (meta.get("annotations") or {}).get("kubernetes.io/service-account.uid") == uid:
        break
    time.sleep(1)
else:
    sys.exit("the Secret kube-system/heatsible-tacker-vim-token has no token after 60 s")
port = urlsplit(server).port or 443
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
with socket.create_connection((ep, port), timeout=5) as c, ctx.wrap_socket(c) as t:
    cert = ssl.DER_cert_to_PEM_cert(t.getpeercert(binary_form=True))
print("vim-info " + json.dumps({"server": server, "token": data["token"], "ca_crt": data["ca.crt"],
                                "secret_uid": meta.get("uid", ""), "service_account_uid": uid,
                                "serving_cert": cert, "cert_from": "%s:%d" % (ep, port)}))
PY
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
  esac > "$tmp/out" 2>&1 || { echo "baseline: $name ($addr) failed:" >&2; grep -v '^vim-info ' "$tmp/out" >&2; exit 1; }
  if [ "$kind" = master ]; then # the VIM's token: kept 0600 here (as heatsible's bundle file), never shown
    (umask 077; sed -n 's/^vim-info //p' "$tmp/out" > "$tmp/vim.json")
    python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); assert v["token"] and v["ca_crt"] and v["serving_cert"]
print("vim: ServiceAccount kube-system/heatsible-tacker-vim %s, token and CA read, serving certificate from %s, server %s" % (v["service_account_uid"], v["cert_from"], v["server"]))' "$tmp/vim.json" ||
      { echo "baseline: $name: no VIM token, CA or certificate" >&2; exit 1; }
  fi
  echo "host $name $(since "$t")"
  hosts=$((hosts + 1))
done < "$tmp/hosts"
echo "total $(since "$T0") ($hosts hosts)"
