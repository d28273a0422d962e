#!/bin/sh
# Can this host take part in a kubeadm join? Runs as root (become), so that
# root's PATH (sudo's secure_path) and root-only files count. Read-only;
# always exits 0 and prints one JSON object:
#   {"hostname": "worker-0", "kubeadm": "/usr/bin/kubeadm", "kubeadm_version": "v1.33.13",
#    "kubelet": "/usr/bin/kubelet", "kubelet_version": "Kubernetes v1.33.13",
#    "kubelet_conf": false}
# kubelet_conf: /etc/kubernetes/kubelet.conf exists (kubeadm join wrote it:
# the host has joined a cluster). The filter plugin judges; nothing here.
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

printf '{"hostname": %s, "kubeadm": %s, "kubeadm_version": %s, "kubelet": %s, "kubelet_version": %s, "kubelet_conf": %s}\n' \
  "$(json_str "$(hostname 2>/dev/null || cat /etc/hostname)")" "$(json_str "$kubeadm")" "$(json_str "$kubeadm_version")" \
  "$(json_str "$kubelet")" "$(json_str "$kubelet_version")" "$conf"
