#!/usr/bin/env bash
# heatsible-external-lb-interface: 1
# (The line above declares heatsible's script interface; keep it in a copy.)
# haproxy-lb.sh: heatsible's sample external load-balancer script. It makes
# the VM it runs on a TCP load balancer (haproxy) in front of the Kubernetes
# workers' ingress NodePorts, and keeps one route (haproxy server) per worker.
#
# It implements heatsible's external load-balancer script interface,
# documented in docs/external-lb.md:
#
#   haproxy-lb.sh [--check] install
#   haproxy-lb.sh [--check] add-route NAME ADDRESS
#   haproxy-lb.sh [--check] remove-route NAME
#   haproxy-lb.sh list-routes
#
# A mutating command's last line on stdout is exactly "changed" or
# "unchanged"; with --check it says what it would do and changes nothing.
# Exit status: 0 ok, 2 bad usage or argument (nothing changed), 1 failure
# (message on stderr).
#
# The configuration file is generated from the routes (one file per route in
# the state directory) and the settings recorded by install. A candidate is
# checked with `haproxy -c` before it replaces the live file (atomic rename),
# and haproxy is reloaded only when the file changed. Every command holds a
# lock (flock) on the state directory.
#
# Environment (all optional):
#   HAPROXY_LB_CONF          haproxy configuration file, entirely managed by
#                            this script (/etc/haproxy/haproxy.cfg); a file
#                            not written by it is kept once as
#                            <file>.heatsible-orig
#   HAPROXY_LB_STATE         state directory (/var/lib/heatsible-lb)
#   HAPROXY_LB_NO_SERVICE=1  never touch the service (no enable, start or
#                            reload): for tests, or when something else runs
#                            haproxy
#   HAPROXY_LB_SERVICE       service name (haproxy)
#   HAPROXY_LB_LOCK_TIMEOUT  seconds to wait for the lock (60)
# Read by install only, then recorded in the state directory, so later
# route commands use the same values whatever their environment:
#   HAPROXY_LB_PORTS         space- or comma-separated FRONT:NODEPORT pairs
#                            ("80:30080 443:30443"): haproxy listens on FRONT
#                            and forwards to NODEPORT on every routed node
#   HAPROXY_LB_BIND          address haproxy listens on ("*": every IPv4
#                            address; "::" for IPv6)
#   HAPROXY_LB_USER          user and group haproxy drops to (haproxy); ""
#                            for none (haproxy run by an unprivileged user)
set -euo pipefail
export LC_ALL=C
umask 022

# Defaults of the install-time settings: an operator may edit these in the
# copy in their VNF package instead of passing the variables.
readonly DEFAULT_PORTS="80:30080 443:30443"
readonly DEFAULT_BIND="*"
readonly DEFAULT_USER=haproxy

readonly PROG=${0##*/}
readonly MARKER="# Managed by heatsible haproxy-lb.sh"
CONF=${HAPROXY_LB_CONF:-/etc/haproxy/haproxy.cfg}
STATE=${HAPROXY_LB_STATE:-/var/lib/heatsible-lb}
NO_SERVICE=${HAPROXY_LB_NO_SERVICE:-0}
SERVICE=${HAPROXY_LB_SERVICE:-haproxy}
LOCK_TIMEOUT=${HAPROXY_LB_LOCK_TIMEOUT:-60}

CHECK=0
TMPFILES=()
cleanup() {
  local f
  for f in "${TMPFILES[@]}"; do rm -f -- "$f"; done
}
trap cleanup EXIT

die() { # die STATUS MESSAGE...
  local status=$1
  shift
  printf '%s: %s\n' "$PROG" "$*" >&2
  exit "$status"
}
usage() { # usage STATUS: on stdout for --help, else on stderr
  local fd=2
  [ "$1" != 0 ] || fd=1
  cat >&"$fd" <<EOF
usage: $PROG [--check] install
       $PROG [--check] add-route NAME ADDRESS
       $PROG [--check] remove-route NAME
       $PROG list-routes
NAME: Kubernetes node name (DNS-1123 label); ADDRESS: IPv4 or IPv6 address.
Mutating commands end their output with "changed" or "unchanged".
EOF
  exit "$1"
}
say() { # what is (or, with --check, would be) done
  if [ "$CHECK" = 1 ]; then printf 'would %s\n' "$*"; else printf '%s\n' "$*"; fi
}
note() { printf '%s\n' "$*"; }

# --- validation -------------------------------------------------------------

valid_name() { [[ $1 =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]]; }

valid_ipv4() {
  [[ $1 =~ ^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$ ]] || return 1
  local i
  for i in 1 2 3 4; do
    ((BASH_REMATCH[i] <= 255)) || return 1
  done
}

# ipv6_groups S: the number of 16-bit groups in S (hex groups separated by
# single colons, or empty), or fail.
ipv6_groups() {
  local s=$1 g n=0
  if [ -z "$s" ]; then
    echo 0
    return 0
  fi
  [[ $s != :* && $s != *: ]] || return 1
  local -a parts
  IFS=: read -ra parts <<<"$s"
  for g in "${parts[@]}"; do
    [[ $g =~ ^[0-9a-f]{1,4}$ ]] || return 1
    n=$((n + 1))
  done
  echo "$n"
}

valid_ipv6() {
  local a=$1 v4 head tail nh nt
  [[ $a =~ ^[0-9a-f:.]+$ && $a == *:* ]] || return 1
  if [[ $a == *.* ]]; then # trailing dotted quad = two groups
    v4=${a##*:}
    valid_ipv4 "$v4" || return 1
    a=${a%"$v4"}0:0
  fi
  if [[ $a == *::* ]]; then
    [[ $a != *::*::* ]] || return 1
    head=${a%%::*}
    tail=${a#*::}
    nh=$(ipv6_groups "$head") || return 1
    nt=$(ipv6_groups "$tail") || return 1
    ((nh + nt <= 7))
  else
    nh=$(ipv6_groups "$a") || return 1
    ((nh == 8))
  fi
}

# parse_ports "80:30080 443:30443" -> "80:30080 443:30443" (normalized), or fail
parse_ports() {
  local spec=${1//,/ } p front back out=() seen=" "
  for p in $spec; do
    [[ $p =~ ^([1-9][0-9]{0,4}):([1-9][0-9]{0,4})$ ]] || return 1
    front=${BASH_REMATCH[1]} back=${BASH_REMATCH[2]}
    ((front <= 65535 && back <= 65535)) || return 1
    [[ $seen != *" $front "* ]] || return 1
    seen+="$front "
    out+=("$front:$back")
  done
  ((${#out[@]} > 0)) || return 1
  echo "${out[*]}"
}

# --- settings and routes ----------------------------------------------------

SET_PORTS="" SET_BIND="" SET_USER=""

settings_from_env() {
  SET_PORTS=$(parse_ports "${HAPROXY_LB_PORTS-$DEFAULT_PORTS}") ||
    die 2 "HAPROXY_LB_PORTS: want FRONT:NODEPORT pairs (ports 1-65535, each FRONT once), got '${HAPROXY_LB_PORTS-}'"
  SET_BIND=${HAPROXY_LB_BIND-$DEFAULT_BIND}
  [[ $SET_BIND == "*" ]] || valid_ipv4 "$SET_BIND" || valid_ipv6 "$SET_BIND" ||
    die 2 "HAPROXY_LB_BIND: want *, an IPv4 or an IPv6 address, got '$SET_BIND'"
  SET_USER=${HAPROXY_LB_USER-$DEFAULT_USER}
  [[ -z $SET_USER || $SET_USER =~ ^[a-z_][a-z0-9_-]*$ ]] ||
    die 2 "HAPROXY_LB_USER: not a user name: '$SET_USER'"
}

settings_text() {
  printf 'ports=%s\nbind=%s\nuser=%s\n' "$SET_PORTS" "$SET_BIND" "$SET_USER"
}

# settings_from_state: the values recorded by install; fails if none.
settings_from_state() {
  local f=$STATE/settings k v
  [ -f "$f" ] || return 1
  while IFS='=' read -r k v; do
    case $k in
    ports) SET_PORTS=$v ;;
    bind) SET_BIND=$v ;;
    user) SET_USER=$v ;;
    esac
  done <"$f"
  parse_ports "$SET_PORTS" >/dev/null || die 1 "$f: bad ports '$SET_PORTS'"
}

# read_routes: "NAME ADDRESS" lines, sorted by name.
read_routes() {
  local f name addr
  [ -d "$STATE/routes" ] || return 0
  for f in "$STATE"/routes/*; do
    [ -f "$f" ] || continue
    name=${f##*/}
    case $name in .*) continue ;; esac # a temporary file of a writer
    valid_name "$name" || die 1 "$STATE/routes: unexpected file '$name'"
    read -r addr <"$f" || true
    valid_ipv4 "$addr" || valid_ipv6 "$addr" || die 1 "$f: not an address: '$addr'"
    printf '%s %s\n' "$name" "$addr"
  done
}

# --- rendering --------------------------------------------------------------

# render ROUTES: the whole haproxy configuration for these routes. It must
# not depend on how the script is called ($0 is a temporary name in a dry run).
render() {
  local routes=$1 pair front back name addr bindaddr
  cat <<EOF
$MARKER ($STATE): written by
# its install, add-route and remove-route commands; edits here are lost.
# Routes: haproxy-lb.sh list-routes. Interface: heatsible docs/external-lb.md.
global
    log /dev/log local0
EOF
  if [ -n "$SET_USER" ]; then
    printf '    user %s\n    group %s\n' "$SET_USER" "$SET_USER"
  fi
  cat <<EOF

defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    timeout connect 5s
    timeout client 1m
    timeout server 1m
    timeout check 5s
EOF
  bindaddr=$SET_BIND
  [[ $bindaddr != *:* ]] || bindaddr="[$bindaddr]"
  for pair in $SET_PORTS; do
    front=${pair%%:*} back=${pair#*:}
    cat <<EOF

frontend heatsible_$front
    bind $bindaddr:$front
    default_backend heatsible_${front}_nodes

backend heatsible_${front}_nodes
    balance roundrobin
EOF
    while read -r name addr; do
      [ -n "$name" ] || continue
      [[ $addr != *:* ]] || addr="[$addr]"
      printf '    server %s %s:%s check\n' "$name" "$addr" "$back"
    done <<<"$routes"
  done
}

live_conf() { if [ -f "$CONF" ]; then cat -- "$CONF"; fi; }

have_haproxy() { command -v haproxy >/dev/null 2>&1; }

# validate FILE: haproxy -c, or fail printing haproxy's complaint.
validate() {
  local out
  if ! out=$(haproxy -c -f "$1" 2>&1); then
    printf '%s\n' "$out" >&2
    die 1 "haproxy -c refused the new configuration; $CONF is unchanged"
  fi
}

# tmp_in DIR: TMP = a new temporary file in DIR (same file system as the
# target, for an atomic rename), removed on exit unless renamed. Not called
# in a subshell, so that the exit trap knows the file.
TMP=""
tmp_in() {
  TMP=$(mktemp "$1/.${PROG}.XXXXXX") || die 1 "cannot create a temporary file in $1"
  TMPFILES+=("$TMP")
}

# check_candidate TEXT: with --check, show the diff and validate in $TMPDIR.
check_candidate() {
  local text=$1 t
  diff -u --label "$CONF" --label "$CONF (new)" <(live_conf) <(printf '%s\n' "$text") || true
  if have_haproxy; then
    t=$(mktemp) || die 1 "cannot create a temporary file"
    TMPFILES+=("$t")
    printf '%s\n' "$text" >"$t"
    validate "$t"
  else
    echo "(haproxy is not installed: the new configuration was not validated)"
  fi
}

# write_conf TEXT: validate, then atomically replace $CONF.
write_conf() {
  local text=$1 dir t
  dir=$(dirname -- "$CONF")
  mkdir -p -- "$dir"
  tmp_in "$dir"
  t=$TMP
  printf '%s\n' "$text" >"$t"
  chmod 0644 "$t"
  validate "$t"
  mv -f -- "$t" "$CONF"
}

# write_file PATH TEXT: atomically replace PATH.
write_file() {
  local t
  tmp_in "$(dirname -- "$1")"
  t=$TMP
  printf '%s\n' "$2" >"$t"
  chmod 0644 "$t"
  mv -f -- "$t" "$1"
}

# --- service ----------------------------------------------------------------

use_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

service_active() {
  if use_systemd; then
    systemctl is-active --quiet "$SERVICE"
  else
    service "$SERVICE" status >/dev/null 2>&1 9>&-
  fi
}

# quiet_run CMD...: run a command that may start a daemon (haproxy, by an
# init script or a package's postinst) so that the daemon inherits neither
# the lock's descriptor (it would hold the lock for its lifetime) nor our
# stdout/stderr (whoever reads them, e.g. Ansible, would wait for it to
# exit): output goes through a file, copied to stderr afterwards.
quiet_run() {
  local log status=0
  log=$(mktemp) || die 1 "cannot create a temporary file"
  TMPFILES+=("$log")
  "$@" </dev/null >"$log" 2>&1 9>&- || status=$?
  cat -- "$log" >&2
  return "$status"
}

service_do() { # start | reload | enable
  if use_systemd; then
    quiet_run systemctl "$1" "$SERVICE" || die 1 "systemctl $1 $SERVICE failed"
  elif [ "$1" != enable ]; then
    quiet_run service "$SERVICE" "$1" || die 1 "service $SERVICE $1 failed"
  fi
}

# reload_after_change: haproxy reads the new configuration: reload, or start
# it when it is not running.
reload_after_change() {
  [ "$NO_SERVICE" != 1 ] || return 0
  if have_haproxy && service_active; then
    say "reload $SERVICE"
    [ "$CHECK" = 1 ] || service_do reload
  else
    say "start $SERVICE"
    [ "$CHECK" = 1 ] || service_do start
  fi
}

# --- locking ----------------------------------------------------------------

lock() {
  command -v flock >/dev/null 2>&1 || die 1 "flock (util-linux) is missing"
  if [ "$CHECK" = 1 ]; then # read-only: create nothing
    [ -e "$STATE/lock" ] || return 0
    exec 9<"$STATE/lock"
  else
    mkdir -p -- "$STATE/routes"
    exec 9>>"$STATE/lock"
  fi
  flock -w "$LOCK_TIMEOUT" 9 || die 1 "another $PROG is running (lock $STATE/lock held for ${LOCK_TIMEOUT}s)"
}

# --- commands ---------------------------------------------------------------

cmd_install() {
  settings_from_env
  lock
  local changed=0 routes text settings old_settings=""
  if ! have_haproxy; then
    command -v apt-get >/dev/null 2>&1 || die 1 "haproxy is missing and there is no apt-get to install it"
    say "install haproxy (apt-get update, then apt-get install)"
    if [ "$CHECK" = 0 ]; then
      # A fresh image's package lists are empty or old (cloud images ship
      # without them): install alone then finds no haproxy. apt-get update
      # leaves out a source that does not answer (with a warning) and
      # fails only when no list could be read at all; install then says
      # what is missing.
      DEBIAN_FRONTEND=noninteractive quiet_run apt-get -o DPkg::Lock::Timeout=300 -q update ||
        printf '%s: apt-get update failed (above); installing from the lists there are\n' "$PROG" >&2
      DEBIAN_FRONTEND=noninteractive quiet_run apt-get -o DPkg::Lock::Timeout=300 -y -q \
        --no-install-recommends install haproxy || die 1 "apt-get install haproxy failed"
    fi
    changed=1
  fi
  routes=$(read_routes)
  text=$(render "$routes")
  local conf_changed=0
  if [ "$text" != "$(live_conf)" ]; then
    conf_changed=1 changed=1
    if [ -f "$CONF" ] && ! grep -qF "$MARKER" -- "$CONF" && [ ! -e "$CONF.heatsible-orig" ]; then
      say "keep the original $CONF as $CONF.heatsible-orig"
      [ "$CHECK" = 1 ] || cp -p -- "$CONF" "$CONF.heatsible-orig"
    fi
    say "write $CONF (ports $SET_PORTS, $(grep -c . <<<"$routes" || true) routes)"
    if [ "$CHECK" = 1 ]; then
      check_candidate "$text"
    else
      write_conf "$text"
    fi
  fi
  # recorded after the configuration passed haproxy -c
  settings=$(settings_text)
  [ ! -f "$STATE/settings" ] || old_settings=$(cat -- "$STATE/settings")
  if [ "$settings" != "$old_settings" ]; then
    say "record the settings in $STATE/settings"
    [ "$CHECK" = 1 ] || write_file "$STATE/settings" "$settings"
    changed=1
  fi
  if [ "$NO_SERVICE" != 1 ]; then
    if use_systemd && ! systemctl is-enabled --quiet "$SERVICE" 2>/dev/null; then
      say "enable $SERVICE"
      [ "$CHECK" = 1 ] || service_do enable
      changed=1
    fi
    if [ "$conf_changed" = 1 ] || ! have_haproxy || ! service_active; then
      reload_after_change
      changed=1
    fi
  fi
  result "$changed"
}

# route_settings: the recorded settings; with --check before any install,
# the ones install would record.
route_settings() {
  settings_from_state && return 0
  [ "$CHECK" = 1 ] || die 1 "not installed ($STATE/settings is missing): run '$PROG install' first"
  settings_from_env
}

cmd_add_route() {
  local name=$1 addr=${2,,}
  valid_name "$name" || die 2 "NAME must be a DNS-1123 label ([a-z0-9-], at most 63, starting and ending alphanumeric): '$1'"
  valid_ipv4 "$addr" || valid_ipv6 "$addr" || die 2 "ADDRESS must be an IPv4 or IPv6 address: '$2'"
  [ "$CHECK" = 1 ] || [ -f "$STATE/settings" ] || die 1 "not installed ($STATE/settings is missing): run '$PROG install' first"
  lock
  route_settings
  local routes old text changed=0 conf_changed=0
  routes=$(read_routes)
  old=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$routes")
  routes=$({
    awk -v n="$name" 'NF && $1 != n' <<<"$routes"
    printf '%s %s\n' "$name" "$addr"
  } | sort)
  text=$(render "$routes")
  if [ "$old" != "$addr" ]; then
    if [ -n "$old" ]; then say "change route $name from $old to $addr"; else say "add route $name $addr"; fi
    changed=1
  fi
  if [ "$text" != "$(live_conf)" ]; then
    [ "$changed" = 1 ] || say "rewrite $CONF (it differed from the routes)"
    changed=1 conf_changed=1
    if [ "$CHECK" = 1 ]; then
      check_candidate "$text"
    else
      write_conf "$text"
    fi
  fi
  if [ "$CHECK" = 0 ] && [ "$old" != "$addr" ]; then
    write_file "$STATE/routes/$name" "$addr"
  fi
  [ "$conf_changed" = 0 ] || reload_after_change
  result "$changed"
}

cmd_remove_route() {
  local name=$1
  valid_name "$name" || die 2 "NAME must be a DNS-1123 label ([a-z0-9-], at most 63, starting and ending alphanumeric): '$1'"
  if [ ! -f "$STATE/settings" ]; then # never installed: no route to remove
    note "not installed: no route $name to remove"
    result 0
    return
  fi
  lock
  route_settings
  local routes old text changed=0 conf_changed=0
  routes=$(read_routes)
  old=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$routes")
  routes=$(awk -v n="$name" 'NF && $1 != n' <<<"$routes")
  text=$(render "$routes")
  if [ -n "$old" ]; then
    say "remove route $name $old"
    changed=1
  fi
  if [ "$text" != "$(live_conf)" ]; then
    [ "$changed" = 1 ] || say "rewrite $CONF (it differed from the routes)"
    changed=1 conf_changed=1
    if [ "$CHECK" = 1 ]; then
      check_candidate "$text"
    else
      write_conf "$text"
    fi
  fi
  if [ "$CHECK" = 0 ] && [ -n "$old" ]; then
    rm -f -- "$STATE/routes/$name"
  fi
  [ "$conf_changed" = 0 ] || reload_after_change
  [ "$changed" = 1 ] || note "no route $name: nothing to remove"
  result "$changed"
}

cmd_list_routes() {
  CHECK=1 lock # read-only: creates nothing
  read_routes
}

result() { if [ "$1" = 1 ]; then echo changed; else echo unchanged; fi; }

# --- main -------------------------------------------------------------------

args=()
for a in "$@"; do
  case $a in
  --check) CHECK=1 ;;
  -h | --help) usage 0 ;;
  -*) die 2 "unknown option '$a' (see --help)" ;;
  *) args+=("$a") ;;
  esac
done
((${#args[@]} > 0)) || usage 2
case ${args[0]} in
install)
  ((${#args[@]} == 1)) || usage 2
  cmd_install
  ;;
add-route)
  ((${#args[@]} == 3)) || usage 2
  cmd_add_route "${args[1]}" "${args[2]}"
  ;;
remove-route)
  ((${#args[@]} == 2)) || usage 2
  cmd_remove_route "${args[1]}"
  ;;
list-routes)
  ((${#args[@]} == 1)) || usage 2
  cmd_list_routes
  ;;
*) die 2 "unknown command '${args[0]}' (see --help)" ;;
esac
