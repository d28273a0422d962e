#!/bin/bash
# install_external_lb.sh: a load-balancer script written to the contract of
# Tacker's kubespray sample (the script of the same name that Tacker's
# kubespray MgmtDriver runs), for heatsible's tests. heatsible's own code,
# not Tacker's. The contract (docs/external-lb.md, "Tacker's contract"):
#
#   bash install_external_lb.sh -m MASTER_IP[,MASTER_IP...] -w WORKER_IP[,...]
#
# run once, as the SSH user (sudo inside), on the load-balancer VM. It
# installs haproxy when missing and APPENDS to /etc/haproxy/haproxy.cfg:
#
#   frontend kubernetes-apiserver   (tcp, *:8383 -> backend kubernetes-apiserver)
#   backend kubernetes-apiserver    ("    server  master<o4> <ip>:6443 check")
#   backend kubernetes-nodeport     ("    server  master<o4> <ip> check" per
#                                    master, "    server  worker<o4> <ip> check"
#                                    per worker; <o4>: the IP's last octet)
#
# (plus one line Tacker's lacks, see below), then enables and starts
# haproxy, restarting it when nothing listens on 8383. Like Tacker's, it is
# not idempotent: a second run appends a second copy (heatsible runs it
# once). It skips what Tacker's also does and the tests do not need:
# installing kubectl.
#
# Test knobs (not part of the contract): TACKER_LB_HAPROXY_CFG (the file,
# /etc/haproxy/haproxy.cfg), TACKER_LB_NO_SERVICE=1 (no systemctl),
# TACKER_LB_RECORD (a file to which each run appends its arguments, user,
# working directory and https_proxy).
set -euo pipefail
export LC_ALL=C

readonly CFG=${TACKER_LB_HAPROXY_CFG:-/etc/haproxy/haproxy.cfg}
readonly PORT=8383

usage() {
  echo "usage: ${0##*/} -m MASTER_IP[,MASTER_IP...] -w WORKER_IP[,WORKER_IP...]" >&2
  exit 2
}

SUDO=()
if [ "$(id -u)" != 0 ]; then SUDO=(sudo -n); fi

MASTERS=""
WORKERS=""
while getopts "m:w:h" opt; do
  case $opt in
    m) MASTERS=$OPTARG ;;
    w) WORKERS=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -ne 0 ] || [ -z "$MASTERS" ]; then usage; fi

# split_ips LIST NAME: the comma-separated IPv4 addresses of LIST into the
# array NAME; exit 2 on anything else (the values end up in haproxy.cfg).
split_ips() {
  local -a list
  local ip
  local -n out=$2
  out=()
  IFS=, read -ra list <<<"$1"
  for ip in "${list[@]}"; do
    if ! [[ $ip =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] ||
      ((BASH_REMATCH[1] > 255 || BASH_REMATCH[2] > 255 || BASH_REMATCH[3] > 255 || BASH_REMATCH[4] > 255)); then
      echo "${0##*/}: not an IPv4 address: \"$ip\"" >&2
      exit 2
    fi
    out+=("$ip")
  done
}
master_ips=()
worker_ips=()
split_ips "$MASTERS" master_ips
split_ips "$WORKERS" worker_ips
[ "${#master_ips[@]}" -gt 0 ] || usage

if [ -n "${TACKER_LB_RECORD:-}" ]; then
  printf '%s -m %s -w %s as %s in %s https_proxy=%s\n' "$(date +%s)" "$MASTERS" "$WORKERS" "$(id -un)" "$PWD" "${https_proxy:-}" >>"$TACKER_LB_RECORD"
fi

if ! command -v haproxy >/dev/null; then
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q update >&2
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y install haproxy >&2
fi

{
  printf 'frontend kubernetes-apiserver\n'
  printf '    mode                 tcp\n'
  printf '    bind                 *:%s\n' "$PORT"
  printf '    option               tcplog\n'
  printf '    default_backend      kubernetes-apiserver\n'
  printf 'backend kubernetes-apiserver\n'
  printf '    mode        tcp\n'
  printf '    balance     roundrobin\n'
  for ip in "${master_ips[@]}"; do
    printf '    server  master%s %s:6443 check\n' "${ip##*.}" "$ip"
  done
  printf 'backend kubernetes-nodeport\n'
  printf '    mode        tcp\n'
  printf '    balance     roundrobin\n'
  # Not in Tacker's script: its port-less "check" servers make haproxy 2.6
  # refuse the file ("has neither service port nor check port"); check
  # kube-proxy's health port instead (what cloud LBs use for NodePorts).
  printf '    default-server port 10256\n'
  for ip in "${master_ips[@]}"; do
    printf '    server  master%s %s check\n' "${ip##*.}" "$ip"
  done
  for ip in "${worker_ips[@]}"; do
    printf '    server  worker%s %s check\n' "${ip##*.}" "$ip"
  done
} | "${SUDO[@]}" tee -a "$CFG" >/dev/null

if [ "${TACKER_LB_NO_SERVICE:-0}" != 1 ]; then
  "${SUDO[@]}" systemctl enable haproxy >&2
  "${SUDO[@]}" systemctl start haproxy
  listening=$(ss -Hlnt "( sport = :$PORT )")
  if [ -z "$listening" ]; then
    "${SUDO[@]}" systemctl restart haproxy
  fi
  systemctl is-active haproxy
fi
echo "haproxy configured: ${#master_ips[@]} master(s), ${#worker_ips[@]} worker(s)"
