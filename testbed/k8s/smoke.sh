#!/usr/bin/env bash
# smoke.sh - check a running control plane (k8s.sh up) does what the bed needs:
# an NFS PV goes Available, a PVC binds to it (Bound), deleting the PVC leaves
# the PV Released. Cleans up its objects. Uses the admin kubeconfig unless
# KUBECONFIG is set.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KUBECTL=$("$HERE/k8s.sh" bin)/kubectl
export KUBECONFIG=${KUBECONFIG:-$REPO/testbed/run/k8s/admin.kubeconfig}
PV=heatsible-smoke-pv
PVC=heatsible-smoke-pvc
NS=default

k() { "$KUBECTL" --cache-dir "$REPO/testbed/run/k8s/kube-cache" "$@"; }
log() { printf 'smoke: %s\n' "$*" >&2; }

cleanup() {
  k delete pvc -n "$NS" "$PVC" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k delete pv "$PV" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

wait_phase() { # wait_phase KIND NAME PHASE SECONDS
  local kind=$1 name=$2 want=$3 secs=$4 i got=
  for ((i = 0; i < secs * 5; i++)); do
    got=$(k get "$kind" -n "$NS" "$name" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    if [[ $got == "$want" ]]; then log "$kind/$name $want"; return 0; fi
    sleep 0.2
  done
  log "FAIL: $kind/$name is '$got', wanted $want after ${secs}s"
  k get pv,pvc -A -o wide >&2 || true
  exit 1
}

cleanup
k apply -f - <<EOF
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $PV
  labels:
    heatsible-smoke: "1"
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  nfs:
    server: 10.231.0.11
    path: /volume/nfs/smoke
EOF
wait_phase pv "$PV" Available 30

k apply -f - <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: $PVC
  namespace: $NS
spec:
  storageClassName: ""
  selector:
    matchLabels:
      heatsible-smoke: "1"
  accessModes: [ReadWriteMany]
  resources:
    requests:
      storage: 1Gi
EOF
wait_phase pvc "$PVC" Bound 60
wait_phase pv "$PV" Bound 30

k delete pvc -n "$NS" "$PVC" --timeout=60s
wait_phase pv "$PV" Released 60
log "OK"
