#!/usr/bin/env bash
# k8s.sh - a real Kubernetes control plane (etcd + kube-apiserver +
# kube-controller-manager) for the heatsible test bed. See README.md here and
# docs/testbed.md.
#
#   k8s.sh build            build kube-apiserver, kube-controller-manager, kubectl
#                           into $HEATSIBLE_CACHE/k8s/v<version>/bin (no-op if present)
#   k8s.sh up               start etcd, kube-apiserver, kube-controller-manager
#                           (idempotent; state in testbed/run/k8s)
#   k8s.sh kubeconfig USER [SERVER]
#                           print a kubeconfig for USER (cluster-admin, x509),
#                           for the API server at SERVER (default: where it binds)
#   k8s.sh status           exit 0 only if everything runs and /readyz is ok
#   k8s.sh down             stop what `up` started, remove testbed/run/k8s
#   k8s.sh bin              print the directory holding the binaries
#
# Environment:
#   HEATSIBLE_CACHE   cache root (default /var/cache/heatsible)
#   K8S_BIND          address kube-apiserver binds to (default 10.231.0.1, on hsbr0);
#                     127.0.0.1 lets you run it without the bed network
#   K8S_CONTROLLERS   kube-controller-manager --controllers (default: see KCM_CONTROLLERS)
#   K8S_EXTRA_SANS    more names for kube-apiserver's serving certificate, comma-separated
#                     (IP:ADDR or DNS:NAME; the bed gives master-0's address, where a
#                     forward stands for a master's API server); `up` of a running
#                     control plane whose certificate lacks one renews the certificate
#                     (same CA) and restarts kube-apiserver only (etcd keeps its data)
set -euo pipefail

K8S_VERSION=1.33.13
STAGING_VERSION=0.${K8S_VERSION#1.}
K8S_MINOR=$(cut -d. -f2 <<<"$K8S_VERSION")
ETCD_PORT=23790
ETCD_PEER_PORT=23791
API_PORT=26443
DEFAULT_BIND=10.231.0.1
# virtual service range (never routed), inside the bed's 10.231.0.0/16 and
# clear of the host subnets 10.231.0.0/24 and 10.231.1.0/24
SERVICE_CIDR=10.231.128.0/24
SERVICE_IP=10.231.128.1
EXTRA_SANS=${K8S_EXTRA_SANS:-}
KCM_CONTROLLERS=${K8S_CONTROLLERS:-persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller,serviceaccount-controller,serviceaccount-token-controller,namespace-controller}
BINARIES=(kube-apiserver kube-controller-manager kubectl)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${HEATSIBLE_CACHE:-/var/cache/heatsible}
K8S_CACHE=$CACHE/k8s
BIN=$K8S_CACHE/v$K8S_VERSION/bin
RUN=$REPO/testbed/run/k8s
PKI=$RUN/pki
LOGS=$RUN/logs
# start order; stopped in reverse
COMPONENTS=(etcd kube-apiserver kube-controller-manager)

log() { printf 'k8s: %s\n' "$*" >&2; }
die() { printf 'k8s: error: %s\n' "$*" >&2; exit 1; }

now_ms() { date +%s%3N; }
secs_since() { local t=$1; awk -v a="$t" -v b="$(now_ms)" 'BEGIN{printf "%.1f", (b-a)/1000}'; }

lock() { # serialize build/up/down across callers; the fd is closed in children
  mkdir -p "$K8S_CACHE"
  exec {LOCK_FD}>"$K8S_CACHE/.lock"
  flock -w 1200 "$LOCK_FD" || die "could not lock $K8S_CACHE/.lock"
}

# ---------------------------------------------------------------- build
have_binaries() {
  local b
  for b in "${BINARIES[@]}"; do [[ -x $BIN/$b ]] || return 1; done
}

cmd_build() {
  if have_binaries; then log "binaries present in $BIN"; return 0; fi
  lock
  if have_binaries; then log "binaries present in $BIN"; return 0; fi
  export PATH=/usr/local/go/bin:$PATH
  command -v go >/dev/null || die "go not found"
  export GOMODCACHE=$K8S_CACHE/go/mod GOCACHE=$K8S_CACHE/go/build GOTMPDIR=$K8S_CACHE/go/tmp
  # the committed go.sum is complete (go mod tidy); readonly keeps the repo clean
  export GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN=local
  export GOWORK=off
  local stage=$K8S_CACHE/v$K8S_VERSION/bin.partial ldflags p b t t0
  rm -rf "$stage"
  mkdir -p "$GOTMPDIR" "$stage"
  ldflags="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR"
    ldflags+=" -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  log "building k8s.io/kubernetes v$K8S_VERSION (staging v$STAGING_VERSION) with $(go version)"
  log "a cold build downloads ~0.8 GB of modules and takes 10-15 min on 2 cores"
  t0=$(now_ms)
  for b in "${BINARIES[@]}"; do
    t=$(now_ms)
    (cd "$HERE/module" && go build -trimpath -ldflags "$ldflags" -o "$stage/$b" "./cmd/$b")
    log "built $b in $(secs_since "$t")s ($(( $(stat -c %s "$stage/$b") / 1048576 )) MiB)"
  done
  rm -rf "$BIN"
  mv "$stage" "$BIN"
  log "build done in $(secs_since "$t0")s: $BIN"
}

# ---------------------------------------------------------------- helpers
bind_addr() { # the address chosen at `up` time wins over the environment
  if [[ -s $RUN/bind ]]; then cat "$RUN/bind"; else echo "${K8S_BIND:-$DEFAULT_BIND}"; fi
}

pid_of() { # prints the PID of a component we started, if it still runs that binary
  local name=$1 pid exe
  [[ -s $RUN/$name.pid ]] || return 1
  pid=$(<"$RUN/$name.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
  [[ ${exe##*/} == "$name" || ${exe##*/} == "$name (deleted)" ]] || return 1
  echo "$pid"
}

kubectl_admin() {
  "$BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" --cache-dir "$RUN/kube-cache" "$@"
}

api_ready() {
  [[ -s $RUN/admin.kubeconfig ]] || return 1
  [[ $(kubectl_admin --request-timeout=3s get --raw /readyz 2>/dev/null) == ok ]]
}

all_running() {
  local c
  for c in "${COMPONENTS[@]}"; do pid_of "$c" >/dev/null || return 1; done
}

# start_detached NAME LOGFILE COMMAND... : new session, stdin /dev/null, every
# inherited fd above 2 closed (a caller may hold a flock on fd 9), PID recorded.
start_detached() {
  local name=$1 logfile=$2; shift 2
  (
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-"; fi
    done
    # not a process-group leader (no job control), so setsid execs in place
    # and $! below is the daemon's own PID
    exec setsid "$@" </dev/null >>"$logfile" 2>&1
  ) &
  echo $! >"$RUN/$name.pid"
  local i
  for ((i = 0; i < 50; i++)); do pid_of "$name" >/dev/null && return 0; sleep 0.1; done
  tail -n 20 "$logfile" >&2 || true
  die "$name did not start (log: $logfile)"
}

port_in_use() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# ---------------------------------------------------------------- install
ensure_packages() {
  local missing=() p had_etcd=1
  for p in etcd-server openssl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  [[ " ${missing[*]} " == *" etcd-server "* ]] && had_etcd=0
  log "installing ${missing[*]}"
  if ! apt-cache policy "${missing[@]}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt-get -o DPkg::Lock::Timeout=600 update -qq
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
    --no-install-recommends "${missing[@]}" >&2
  # Debian's postinst may start the packaged etcd (on 2379): stop it only if
  # this install started it
  if ((had_etcd == 0)); then
    if command -v systemctl >/dev/null && systemctl is-active --quiet etcd 2>/dev/null; then
      systemctl stop etcd || true
    elif [[ -x /etc/init.d/etcd ]] && /etc/init.d/etcd status >/dev/null 2>&1; then
      /etc/init.d/etcd stop >&2 || true
    fi
  fi
}

# ---------------------------------------------------------------- certs
# sign NAME SUBJECT EXT : key + cert signed by the CA
sign() {
  local name=$1 subj=$2 ext=$3
  openssl req -new -newkey rsa:2048 -nodes -subj "$subj" \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
  printf '%b\n' "$ext" >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 365 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

client_cert() { # client_cert NAME CN GROUP
  sign "$1" "/O=$3/CN=$2" \
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
}

check_extra_sans() {
  local s
  for s in ${EXTRA_SANS//,/ }; do
    [[ $s =~ ^IP:[0-9]+(\.[0-9]+){3}$ || $s =~ ^DNS:[a-z0-9]([a-z0-9.-]*[a-z0-9])?$ ]] ||
      die "K8S_EXTRA_SANS: $s is not IP:ADDR (IPv4) or DNS:NAME"
  done
}

# apiserver_cert BIND: kube-apiserver's serving certificate, signed by the CA,
# for the bound address, the service address, the usual names and EXTRA_SANS
apiserver_cert() {
  local bind=$1 sans
  sans="IP:$DEFAULT_BIND,IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default"
  sans+=",DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  [[ $bind == "$DEFAULT_BIND" || $bind == 127.0.0.1 ]] || sans="IP:$bind,$sans"
  [[ -z $EXTRA_SANS ]] || sans="$EXTRA_SANS,$sans"
  sign apiserver "/CN=kube-apiserver" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=$sans"
}

# has_extra_sans: the serving certificate names every EXTRA_SANS entry
has_extra_sans() {
  local have s
  have=$(openssl x509 -in "$PKI/apiserver.crt" -noout -ext subjectAltName 2>/dev/null) || return 1
  have=",$(tail -n +2 <<<"$have" | tr -d ' '),"
  have=${have//IPAddress:/IP:}
  for s in ${EXTRA_SANS//,/ }; do [[ $have == *",$s,"* ]] || return 1; done
}

make_pki() {
  local bind=$1
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  openssl req -x509 -newkey rsa:2048 -nodes -days 365 -sha256 -subj "/CN=heatsible-testbed-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  apiserver_cert "$bind"
  # system:masters bypasses RBAC
  client_cert admin heatsible-admin system:masters
  client_cert kube-controller-manager system:kube-controller-manager system:masters
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
}

b64() { base64 -w0 <"$1"; }

# kubeconfig_for CERTNAME USER [SERVER] : kubeconfig with embedded CA and client cert
kubeconfig_for() {
  local cert=$1 user=$2 server=${3:-https://$(bind_addr):$API_PORT}
  cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: heatsible-testbed
  cluster:
    server: $server
    certificate-authority-data: $(b64 "$PKI/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$PKI/$cert.crt")
    client-key-data: $(b64 "$PKI/$cert.key")
contexts:
- name: $user@heatsible-testbed
  context:
    cluster: heatsible-testbed
    user: $user
current-context: $user@heatsible-testbed
EOF
}

# ---------------------------------------------------------------- up
wait_until() { # wait_until SECONDS WHAT COMMAND... ; fails if a component died
  local secs=$1 what=$2 i c; shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" && return 0
    for c in "${COMPONENTS[@]}"; do
      if [[ -e $RUN/$c.pid ]] && ! pid_of "$c" >/dev/null; then
        tail -n 30 "$LOGS/$c.log" >&2 || true
        die "$c exited while waiting for $what (log: $LOGS/$c.log)"
      fi
    done
    sleep 0.2
  done
  die "$what not reached within ${secs}s (logs: $LOGS)"
}

kcm_started() { grep -q 'Started controller.*persistentvolume-binder' "$LOGS/kube-controller-manager.log" 2>/dev/null; }

start_apiserver() {
  local bind=$1
  start_detached kube-apiserver "$LOGS/kube-apiserver.log" "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address="$bind" --secure-port="$API_PORT" --advertise-address="$bind" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --authorization-mode=RBAC \
    --anonymous-auth=false \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --endpoint-reconciler-type=none \
    --watch-cache=false \
    --enable-priority-and-fairness=false \
    --profiling=false
}

# A running control plane whose serving certificate lacks a name of
# K8S_EXTRA_SANS: a new certificate from the same CA, and kube-apiserver
# restarted with it (etcd, the controller manager, the CA, the service
# account keys, and so every object and token, stay).
renew_apiserver_cert() {
  local t0 pid
  t0=$(now_ms)
  log "kube-apiserver's certificate lacks some of $EXTRA_SANS: renewing it and restarting kube-apiserver"
  apiserver_cert "$(bind_addr)"
  pid=$(pid_of kube-apiserver) && stop_pid "$pid"
  start_apiserver "$(bind_addr)"
  wait_until 60 "kube-apiserver /readyz" api_ready
  log "kube-apiserver ready after $(secs_since "$t0")s, its certificate names $EXTRA_SANS"
}

cmd_up() {
  have_binaries || die "binaries missing in $BIN: run '$0 build' first"
  check_extra_sans
  if all_running && api_ready && has_extra_sans; then log "already running and ready ($(bind_addr):$API_PORT)"; return 0; fi
  lock
  if all_running && api_ready; then
    has_extra_sans || renew_apiserver_cert
    log "already running and ready ($(bind_addr):$API_PORT)"
    return 0
  fi
  # anything half-started goes away first
  if [[ -e $RUN ]]; then log "cleaning up a previous, unhealthy run"; stop_all; fi

  local bind=${K8S_BIND:-$DEFAULT_BIND} t0 p pid
  [[ $bind =~ ^[0-9]+(\.[0-9]+){3}$ ]] || die "K8S_BIND=$bind is not an IPv4 address"
  # Not "ip ... | grep -q" under pipefail: grep's early exit can fail ip
  # with SIGPIPE, and a netlink dump that overlaps a change (a bed host's
  # veth coming up) makes ip exit 1 ("Dump was interrupted"): read it whole,
  # and again if it failed. Seen once: the check failed with the address up.
  local addrs="" i
  for i in 1 2 3 4 5; do addrs=$(ip -o -4 addr show 2>/dev/null) && break; sleep 0.2; done
  if [[ $bind != 127.0.0.1 ]] && [[ $addrs != *" inet $bind/"* ]]; then
    if [[ $bind == "$DEFAULT_BIND" ]]; then
      die "$bind is not configured on this machine: the bridge hsbr0 is created by the hosts script (testbed/hosts); bring it up first, or set K8S_BIND=127.0.0.1 to test alone"
    fi
    die "K8S_BIND=$bind is not configured on this machine"
  fi
  for p in "$ETCD_PORT" "$ETCD_PEER_PORT" "$API_PORT"; do
    port_in_use "$p" && die "TCP port $p is already in use (a stray etcd/kube-apiserver not started by this run dir?)"
  done
  ensure_packages

  mkdir -p "$RUN" "$LOGS" "$RUN/etcd"
  chmod 700 "$RUN/etcd"
  echo "$bind" >"$RUN/bind"
  make_pki "$bind"
  kubeconfig_for admin heatsible-admin >"$RUN/admin.kubeconfig"
  kubeconfig_for kube-controller-manager system:kube-controller-manager >"$RUN/kube-controller-manager.kubeconfig"
  # the KCM runs on the machine: reach the apiserver on the bound address
  chmod 600 "$RUN"/*.kubeconfig

  t0=$(now_ms)
  start_detached etcd "$LOGS/etcd.log" /usr/bin/etcd --name heatsible-testbed \
    --data-dir "$RUN/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "heatsible-testbed=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new \
    --snapshot-count 5000 --logger zap --log-outputs stderr

  start_apiserver "$bind"

  start_detached kube-controller-manager "$LOGS/kube-controller-manager.log" "$BIN/kube-controller-manager" \
    --kubeconfig="$RUN/kube-controller-manager.kubeconfig" \
    --leader-elect=false \
    --controllers="$KCM_CONTROLLERS" \
    --secure-port=0 \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --use-service-account-credentials=false \
    --flex-volume-plugin-dir="$RUN/flexvolume" \
    --profiling=false

  wait_until 60 "kube-apiserver /readyz" api_ready
  log "kube-apiserver ready after $(secs_since "$t0")s"
  wait_until 60 "kube-controller-manager PV binder start" kcm_started
  log "kube-controller-manager PV controllers started after $(secs_since "$t0")s"
  for p in "${COMPONENTS[@]}"; do pid=$(pid_of "$p"); log "  $p pid $pid"; done
  log "admin kubeconfig: $RUN/admin.kubeconfig (server https://$bind:$API_PORT)"
}

# ---------------------------------------------------------------- kubeconfig
cmd_kubeconfig() {
  local user=${1:-} server=${2:-}
  [[ $user =~ ^[a-z_][a-z0-9_-]{0,31}$ ]] || die "usage: $0 kubeconfig USER [SERVER] (a plain user name)"
  [[ -z $server || $server =~ ^https://[0-9a-z.-]+:[0-9]+$ ]] || die "kubeconfig: SERVER $server is not https://HOST:PORT"
  [[ -s $PKI/ca.key ]] || die "no control plane state in $RUN: run '$0 up' first"
  if [[ ! -s $PKI/user-$user.crt ]]; then
    lock
    [[ -s $PKI/user-$user.crt ]] || client_cert "user-$user" "$user" system:masters
  fi
  kubeconfig_for "user-$user" "$user" "$server"
}

# ---------------------------------------------------------------- down / status
stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  log "pid $pid ignored SIGTERM for 10s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

stop_all() {
  local i c pid
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    c=${COMPONENTS[i]}
    if pid=$(pid_of "$c"); then log "stopping $c (pid $pid)"; stop_pid "$pid"; fi
  done
  [[ $RUN == */testbed/run/k8s ]] || die "refusing to remove $RUN"
  rm -rf "$RUN"
}

cmd_down() {
  [[ -e $RUN ]] || { log "not running"; return 0; }
  lock
  stop_all
  log "stopped; removed $RUN"
}

rss_mib() { awk '/^VmRSS/{printf "%d MiB", $2/1024}' "/proc/$1/status" 2>/dev/null; }

cmd_status() {
  local c pid ok=0
  for c in "${COMPONENTS[@]}"; do
    if pid=$(pid_of "$c"); then
      printf '%-24s running (pid %s, rss %s)\n' "$c" "$pid" "$(rss_mib "$pid")"
    else
      printf '%-24s not running\n' "$c"; ok=1
    fi
  done
  if ((ok == 0)) && api_ready; then
    printf '%-24s ok (https://%s:%s)\n' readyz "$(bind_addr)" "$API_PORT"
  else
    printf '%-24s not ready\n' readyz; ok=1
  fi
  return "$ok"
}

case ${1:-} in
  build) cmd_build ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kubeconfig) shift; cmd_kubeconfig "$@" ;;
  bin) echo "$BIN" ;;
  *) echo "usage: $0 build|up|down|status|kubeconfig USER [SERVER]|bin" >&2; exit 2 ;;
esac
