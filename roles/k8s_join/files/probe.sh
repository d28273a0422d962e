#!/bin/sh
# Can this host take part in a kubeadm join? Runs as root (become), so that
# root's PATH (sudo's secure_path) and root-only files count. Read-only;
# always exits 0 and prints one JSON object:
#   {"hostname": "worker-0", "kubeadm": "/usr/bin/kubeadm", "kubeadm_version": "v1.33.13",
#    "kubelet": "/usr/bin/kubelet", "kubelet_version": "Kubernetes v1.33.13",
#    "kubelet_conf": false, "cri_sockets": ["unix:///var/run/containerd/containerd.sock"],
#    "runtime_endpoint": "unix:///run/containerd/containerd.sock"}
# kubelet_conf: /etc/kubernetes/kubelet.conf exists (kubeadm join wrote it:
# the host has joined a cluster). cri_sockets: the CRI endpoints kubeadm
# 1.24+ knows (cmd/kubeadm/app/util/runtime: containerd, CRI-O,
# cri-dockerd) that accept a connection, as kubeadm dials them; with more
# than one, kubeadm join without criSocket fails ("found multiple CRI
# endpoints on the host"). runtime_endpoint: the one this host's kubelet
# uses (containerRuntimeEndpoint in /var/lib/kubelet/config.yaml, else
# --container-runtime-endpoint in /var/lib/kubelet/kubeadm-flags.env), ""
# if neither names one. The filter plugin judges; nothing here.
set -u

# JSON string of $1 (control characters dropped; backslash and quote escaped).
json_str() {
  printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# A version line, bounded in time: a broken binary must not hang the probe.
first_line() {
  if command -v timeout >/dev/null 2>&1; then timeout 30 "$@" 2>/dev/null | head -n 1; else "$@" 2>/dev/null | head -n 1; fi
}

kubeadm=$(command -v kubeadm 2>/dev/null || true)
kubelet=$(command -v kubelet 2>/dev/null || true)
kubeadm_version=
kubelet_version=
[ -n "$kubeadm" ] && kubeadm_version=$(first_line "$kubeadm" version -o short)
[ -n "$kubelet" ] && kubelet_version=$(first_line "$kubelet" --version)
if [ -e /etc/kubernetes/kubelet.conf ]; then conf=true; else conf=false; fi

# A socket that answers, as kubeadm's isExistingSocket (net.Dial) sees it:
# with python3 when there is one, else any socket file.
answers() {
  if command -v python3 >/dev/null 2>&1; then
    timeout 5 python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])' "$1" 2>/dev/null
  else
    [ -S "$1" ]
  fi
}
sockets=
for s in /var/run/containerd/containerd.sock /var/run/crio/crio.sock /var/run/cri-dockerd.sock; do
  if [ -S "$s" ] && answers "$s"; then sockets="$sockets${sockets:+, }$(json_str "unix://$s")"; fi
done
endpoint=$(sed -n 's/^containerRuntimeEndpoint:[[:space:]]*//p' /var/lib/kubelet/config.yaml 2>/dev/null | head -n 1 | tr -d "\"'")
if [ -z "$endpoint" ]; then
  endpoint=$(sed -n 's/.*--container-runtime-endpoint[= ]\([^ "]*\).*/\1/p' /var/lib/kubelet/kubeadm-flags.env 2>/dev/null | head -n 1)
fi

printf '{"hostname": %s, "kubeadm": %s, "kubeadm_version": %s, "kubelet": %s, "kubelet_version": %s, "kubelet_conf": %s, "cri_sockets": [%s], "runtime_endpoint": %s}\n' \
  "$(json_str "$(hostname 2>/dev/null || cat /etc/hostname)")" "$(json_str "$kubeadm")" "$(json_str "$kubeadm_version")" \
  "$(json_str "$kubelet")" "$(json_str "$kubelet_version")" "$conf" "$sockets" "$(json_str "$endpoint")"
