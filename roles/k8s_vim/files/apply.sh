#!/bin/sh
# Apply the VIM's ServiceAccount, ClusterRoleBinding and token Secret on this
# master, in one round trip. Runs as whoever can read the admin kubeconfig
# (the kubeconfig role says). Judges nothing; the role's assert does.
#
# Usage: apply.sh API_TIMEOUT API_DELAY DRY MANIFESTS_B64 KUBECTL...
#   DRY: non-empty for check mode (kubectl apply --dry-run=server: the API
#   server validates and admits the objects without storing them).
# Prints "server URL" (the admin kubeconfig's server) and one "apply ..."
# line per line kubectl apply printed. Exit 10: the API server did not
# answer within API_TIMEOUT seconds (kubectl's last error on stderr); 11:
# kubectl apply failed (its message on stderr).
set -u
api_timeout=$1 api_delay=$2 dry=$3 payload=$4
shift 4

server() {
  "$@" config view --minify -o 'jsonpath={.clusters[0].cluster.server}' 2>/dev/null
}

deadline=$(( $(date +%s) + api_timeout ))
until err=$("$@" get --raw /readyz --request-timeout=5s 2>&1 >/dev/null); do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "server $(server "$@")"
    printf '%s\n' "$err" | sed '/^[[:space:]]*$/d' | tail -n 1 >&2
    exit 10
  fi
  sleep "$api_delay"
done
echo "server $(server "$@")"
rc=0
out=$(printf '%s' "$payload" | base64 -d | "$@" apply -f - ${dry:+--dry-run=server}) || rc=$?
printf '%s\n' "$out" | sed '/^$/d; s/^/apply /'
[ "$rc" -eq 0 ] || exit 11
