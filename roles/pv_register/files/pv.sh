#!/bin/sh
# pv_register's commands on the master, each one round trip (raw: no Python
# needed there). Run as whoever can read the admin kubeconfig (the
# kubeconfig role says). Judges nothing the role can judge: the filter
# plugin (collection/plugins/filter/pv_register.py) reads what it prints, by key.
#
#   pv.sh wait API_TIMEOUT API_DELAY REQUEST_TIMEOUT -- KUBECTL...
#     Return once the API server answers /readyz (tasks/api.yml).
#   pv.sh apply API_TIMEOUT API_DELAY REQUEST_TIMEOUT WAIT_TIMEOUT WAIT_DELAY DRY PAYLOAD NAME... -- KUBECTL...
#     Wait for the API server, apply PAYLOAD (base64 of one YAML stream) in
#     one kubectl apply (DRY non-empty: --dry-run=server, and no wait), then
#     wait within WAIT_TIMEOUT until every NAME is Available, Bound or
#     Failed (tasks/present.yml).
#
# Output, one key and its value per line:
#   server URL         the API server never answered (exit 10; kubectl's
#                      last error on stderr)
#   apply LINE         a line kubectl apply printed (exit 11: it failed, its
#                      message on stderr)
#   phase NAME PHASE   each PV after the wait (custom columns: neither a PV
#                      name nor a phase holds a blank)
set -fu

# api_wait TIMEOUT DELAY REQUEST_TIMEOUT KUBECTL...
api_wait() {
  deadline=$(( $(date +%s) + $1 )) delay=$2 request=$3
  shift 3
  until err=$("$@" get --raw /readyz "--request-timeout=${request}s" 2>&1 >/dev/null); do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "server $("$@" config view --minify -o 'jsonpath={.clusters[0].cluster.server}' 2>/dev/null)"
      printf '%s\n' "$err" | sed '/^[[:space:]]*$/d' | tail -n 1 >&2
      exit 10
    fi
    sleep "$delay"
  done
}

mode=$1
shift
case $mode in
wait)
  api_timeout=$1 api_delay=$2 request=$3
  shift 3
  [ "$1" = -- ] && shift
  api_wait "$api_timeout" "$api_delay" "$request" "$@"
  exit 0
  ;;
apply) ;;
*)
  echo "pv.sh: unknown command $mode" >&2
  exit 2
  ;;
esac

api_timeout=$1 api_delay=$2 request=$3 wait_timeout=$4 wait_delay=$5 dry=$6 payload=$7
shift 7
names="" count=0
while [ "$1" != -- ]; do
  names="$names $1" count=$((count + 1))
  shift
done
shift
api_wait "$api_timeout" "$api_delay" "$request" "$@"
rc=0
out=$(printf '%s' "$payload" | base64 -d | "$@" apply -f - ${dry:+--dry-run=server}) || rc=$?
printf '%s\n' "$out" | sed '/^$/d; s/^/apply /'
[ "$rc" -eq 0 ] || exit 11
[ -z "$dry" ] || exit 0
deadline=$(( $(date +%s) + wait_timeout ))
while :; do
  rc=0
  # $names unquoted on purpose: one word per PV name (set -f: no globbing;
  # names are DNS-1123, checked by heatsible).
  # shellcheck disable=SC2086
  ph=$("$@" get persistentvolumes --no-headers -o custom-columns=NAME:.metadata.name,PHASE:.status.phase $names) || rc=$?
  if [ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$ph" | awk 'NF' | wc -l)" -eq "$count" ] \
    && [ "$(printf '%s\n' "$ph" | awk 'NF && $2 != "Available" && $2 != "Bound" && $2 != "Failed"' | wc -l)" -eq 0 ]; then
    break
  fi
  [ "$(date +%s)" -lt "$deadline" ] || break
  sleep "$wait_delay"
done
printf '%s\n' "$ph" | sed '/^$/d; s/^/phase /'
exit "$rc"
