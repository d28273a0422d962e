#!/bin/bash
# pv_register's unregister path (heal of the storage server) against the bed,
# after run.sh registered the PVs:
#  1. a claim binds nfs-pv1           -> pv_state=absent must fail naming it, delete nothing
#  2. the claim is deleted (Released) -> must still fail (operator decides)
#  3. the operator deletes nfs-pv1    -> absent deletes the rest and waits
#  4. present registers them again (Available)
# Usage: testdata/roles/heal.sh   (the bed must be up, run.sh done)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bed=$(cd "$here/../../testbed/run" && pwd)
out=$(mktemp -d /tmp/heatsible-heal.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$here/make_inventory.py" "$out" >/dev/null
export ANSIBLE_CONFIG=$out/ansible.cfg
KUBECONFIG=$(set -a; . "$bed/env"; echo "$KUBECONFIG"); export KUBECONFIG
log=${LOG_DIR:-$out}
pv() { # name, extra args: the pv_register play only
  local name=$1; shift
  echo "=== $name: pv_register $*"
  ansible-playbook -e "@$out/secrets.yml" "$here/site.yml" --limit 'kube_control_plane[0]' "$@" >"$log/$name.log" 2>&1
  local rc=$?
  grep -E 'msg|^\S+ +: ok=' "$log/$name.log" | grep -vE '^\s*"msg": \[$' | tail -4
  return $rc
}
kubectl apply -f - <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: heal-test, namespace: default}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: nfs-pv1
  resources: {requests: {storage: 1Gi}}
YAML
for i in $(seq 30); do [ "$(kubectl get pvc heal-test -o jsonpath='{.status.phase}')" = Bound ] && break; sleep 2; done
kubectl get pv
if pv absent-bound -e pv_state=absent; then echo "FAIL: absent succeeded while nfs-pv1 is Bound"; exit 1; fi
kubectl get pv nfs-pv1 nfs-pv2 >/dev/null && echo "ok: refused while Bound, nothing deleted"
kubectl delete pvc heal-test --wait=true
for i in $(seq 30); do [ "$(kubectl get pv nfs-pv1 -o jsonpath='{.status.phase}')" = Released ] && break; sleep 2; done
kubectl get pv
if pv absent-released -e pv_state=absent; then echo "FAIL: absent succeeded while nfs-pv1 is Released"; exit 1; fi
kubectl get pv nfs-pv1 nfs-pv2 >/dev/null && echo "ok: refused while Released, nothing deleted"
kubectl delete pv nfs-pv1   # the operator's decision
pv absent -e pv_state=absent
[ -z "$(kubectl get pv -l app.kubernetes.io/managed-by=heatsible -o name)" ] && echo "ok: unregistered"
pv absent-again -e pv_state=absent
pv present-again
kubectl get pv
