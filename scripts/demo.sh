#!/usr/bin/env bash
# The demo: bring the local test bed up and run heatsible on it, from Heat
# discovery to Available PersistentVolumes, through the bed's Ansible host.
# Run by "make demo" (which first installs the dependencies and builds).
set -euo pipefail
cd "$(dirname "$0")/.."

testbed/bin/bed up

set -a
# shellcheck disable=SC1091
. testbed/run/env
set +a

echo
echo "== heatsible: the cluster as read from Heat (stack $HEATSIBLE_STACK)"
bin/heatsible topology --request testbed/run/request.json --stack "$HEATSIBLE_STACK" | head -40

echo
echo "== heatsible run instantiate-end"
bin/heatsible run instantiate-end \
  --request testbed/run/request.json --package testbed/run/package \
  --stack "$HEATSIBLE_STACK" --known-hosts testbed/run/known_hosts

echo
echo "== kubectl get pv (on master-0, as root with the admin kubeconfig, as kubespray leaves it)"
testbed/bin/bed exec master-0 -- kubectl --kubeconfig /etc/kubernetes/admin.conf get pv -o wide

cat <<MSG

The bed is still up: run heatsible again (a re-run changes nothing), look
around with "testbed/bin/bed exec HOST -- CMD", and take it down with:

    make testbed-down
MSG
