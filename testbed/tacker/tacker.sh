#!/bin/bash
# heatsible test bed: a real OpenStack Tacker (16.0.0 from PyPI) on this
# machine, beside heat.sh's Keystone + Heat + MariaDB, loopback only.
#
#   tacker.sh install    RabbitMQ (Debian), the cached Tacker virtualenv, the shim
#   tacker.sh up         start RabbitMQ, tacker-server, tacker-conductor; DB, Keystone
#                        user/endpoint, the bed's OpenStack as default VIM (healthy: no-op)
#   tacker.sh status     exit 0 iff everything answers; prints RSS
#   tacker.sh restart-conductor   re-read conductor.env(.local) and restart the conductor
#   tacker.sh openstack ARGS...   the venv's openstack CLI as the bed's admin
#   tacker.sh down       stop what up started (by pidfile); drops Tacker's DB and state
#
#   rabbitmq          127.0.0.1:25672 (epmd 127.0.0.1:24369, dist 25673)
#   tacker-server     http://127.0.0.1:29890  (Keystone service nfv-orchestration)
#   tacker-conductor  RPC over RabbitMQ; runs heatsible through the shim
#   glance (stand-in) http://127.0.0.1:29292  (Keystone service image; glance/bed_glance.py)
#
# Needs heat.sh up (MariaDB, Keystone, Heat). State: testbed/run/tacker/
# (etc/, logs/, pids/, state/, secrets, conductor.env, env). The venv:
# $HEATSIBLE_CACHE/tacker/venv-<stamp> (docs/testbed.md, "Tacker").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# physical paths: testbed/run is a symlink in worktrees, and Tacker keeps paths
# (package locations) in its database
RUN=$(readlink -f "$ROOT/testbed/run")/tacker
HEAT_RUN=$(readlink -f "$ROOT/testbed/run")/heat
ETC=$RUN/etc; LOGS=$RUN/logs; PIDS=$RUN/pids; STATE=$RUN/state
CACHE=${HEATSIBLE_CACHE:-/var/cache/heatsible}/tacker
TACKER_PORT=${TACKER_API_PORT:-29890}
RABBIT_PORT=${TACKER_RABBIT_PORT:-25672}
RABBIT_DIST_PORT=$((RABBIT_PORT + 1))
EPMD_PORT=${TACKER_EPMD_PORT:-24369}
GLANCE_PORT=${TACKER_GLANCE_PORT:-29292}
GLANCE_URL=http://127.0.0.1:$GLANCE_PORT
TACKER_URL=http://127.0.0.1:$TACKER_PORT
DB_PORT=${HEAT_DB_PORT:-25306}
KS_URL=http://127.0.0.1:${HEAT_KS_PORT:-25000}
PY=/usr/bin/python3      # the venv's base: Debian 12's Python 3.11
TACKER_VERSION=16.0.0
TACKERCLIENT_VERSION=2.6.0
VENV_LAYOUT=1            # bump when what goes into the venv changes
CONF_LAYOUT=3            # bump when tacker.conf or the services' environment change: up restarts them
SHIM_SRC=$ROOT/contrib/tacker
export DEBIAN_FRONTEND=noninteractive
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost

log() { echo "[tacker.sh $(date +%T)] $*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
wait_for() { # wait_for SECONDS CMD...: poll every 0.25 s, bounded by the clock (CMD may be slow)
  local end=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}
lock() {
  mkdir -p "$RUN"
  exec 8>"$RUN/.lock"
  flock -w 900 8 || die "another tacker.sh holds $RUN/.lock"
}
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
stop() { # stop PIDFILE NAME: TERM, bounded wait, KILL; only the pid we recorded
  local f=$1 p i
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    for ((i = 0; i < 80; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$p" 2>/dev/null; then kill -9 "$p" 2>/dev/null || true; fi
    log "stopped $2 (pid $p)"
  fi
  rm -f "$f"
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------------------------------------------------------------- the venv
venv_stamp() {
  { echo "layout $VENV_LAYOUT tacker $TACKER_VERSION tackerclient $TACKERCLIENT_VERSION"
    "$PY" -c 'import sys; print(sys.version)'
    cat "$HERE/constraints.txt"; } | sha256sum | cut -c1-16
}
VENV=""
find_venv() { VENV=$CACHE/venv-$(venv_stamp); }

build_venv() {
  find_venv
  if [ -x "$VENV/bin/tacker-server" ] && [ -f "$VENV/.complete" ]; then log "venv cached: $VENV"; return 0; fi
  local t0; t0=$(now)
  mkdir -p "$CACHE"
  log "building the Tacker venv (tacker $TACKER_VERSION, python-tackerclient $TACKERCLIENT_VERSION) from PyPI"
  # The venv's own path is baked into its scripts: built where it will live;
  # .complete marks a finished build (a half-built one is built again).
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -c "$HERE/constraints.txt" \
    "tacker==$TACKER_VERSION" "python-tackerclient==$TACKERCLIENT_VERSION" python-openstackclient wheel \
    > "$CACHE/pip-install.log" 2>&1 || { tail -20 "$CACHE/pip-install.log" >&2; rm -rf "$VENV"; die "pip install failed (log: $CACHE/pip-install.log)"; }
  "$VENV/bin/pip" freeze --disable-pip-version-check > "$VENV/pip-freeze.txt"
  touch "$VENV/.complete"
  # venvs of other stamps are stale
  local d; for d in "$CACHE"/venv-*; do [ "$d" = "$VENV" ] || rm -rf "$d"; done
  log "venv built in $(since "$t0")s ($(du -sm "$VENV" | cut -f1) MiB): $VENV"
}

# The shim as a distribution with Tacker's entry point; reinstalled when its
# files changed (the bytes the VNF packages carry must equal the installed ones).
SHIM_CHANGED=0
install_shim() {
  find_venv
  local want have
  want=$(cat "$SHIM_SRC/pyproject.toml" "$SHIM_SRC"/heatsible_mgmt_driver.py "$SHIM_SRC"/heatsible_kubeadm_mgmt_driver.py | sha256sum | cut -c1-16)
  have=$(cat "$VENV/.heatsible-shim" 2>/dev/null || true)
  if [ "$want" = "$have" ] && "$VENV/bin/python" -c 'import heatsible_mgmt_driver' 2>/dev/null; then return 0; fi
  # setuptools builds the wheel with `wheel` (no build isolation: nothing fetched here)
  "$VENV/bin/python" -c 'import wheel' 2>/dev/null || "$VENV/bin/pip" install -q --disable-pip-version-check wheel
  local tmp; tmp=$(mktemp -d)
  cp "$SHIM_SRC/pyproject.toml" "$SHIM_SRC/heatsible_mgmt_driver.py" "$SHIM_SRC/heatsible_kubeadm_mgmt_driver.py" "$tmp/"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "$tmp" \
    > "$LOGS/shim-install.log" 2>&1 || { rm -rf "$tmp"; die "installing the shim failed (log: $LOGS/shim-install.log)"; }
  rm -rf "$tmp"
  echo "$want" > "$VENV/.heatsible-shim"
  SHIM_CHANGED=1
  log "shim installed: $("$VENV/bin/python" -c 'import heatsible_mgmt_driver as m; print(m.__file__)')"
}

do_install() {
  local t0; t0=$(now)
  mkdir -p "$LOGS"
  if ! dpkg-query -W -f='${Status}\n' rabbitmq-server 2>/dev/null | grep -q 'install ok installed' || ! command -v zip >/dev/null; then
    apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends rabbitmq-server python3-venv zip
  fi
  build_venv
  install_shim
  log "install done in $(since "$t0")s"
}

# ---------------------------------------------------------------- secrets, configs
gen_secret() { head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24; }
secrets() {
  mkdir -p "$RUN"; chmod 700 "$RUN"
  if [ ! -s "$RUN/secrets" ]; then
    ( umask 077
      { echo "TACKER_DB_PASS=$(gen_secret)"; echo "TACKER_SERVICE_PASS=$(gen_secret)"; echo "RABBIT_PASS=$(gen_secret)"; } > "$RUN/secrets.tmp"
      mv "$RUN/secrets.tmp" "$RUN/secrets" )
  fi
  # shellcheck disable=SC1091
  . "$RUN/secrets"
  [ -s "$HEAT_RUN/secrets" ] || die "no $HEAT_RUN/secrets: run heat.sh up first"
  # shellcheck disable=SC1091
  . "$HEAT_RUN/secrets"
}

write_configs() {
  find_venv
  mkdir -p "$RUN/keymgr" && chmod 700 "$RUN/keymgr"
  mkdir -p "$ETC" "$LOGS" "$PIDS" "$STATE/vnfpackages" "$STATE/csar_files" "$STATE/lock" "$RUN/rabbitmq" "$RUN/vim-keys" "$RUN/heatsible-state"
  chmod 700 "$ETC" "$RUN/vim-keys" "$RUN/heatsible-state"
  ( umask 077
  cat > "$ETC/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$RABBIT_PORT
default_user = tacker
default_pass = $RABBIT_PASS
default_vhost = /
loopback_users = none
log.file.level = warning
EOF
  cat > "$ETC/rabbitmq-env.conf" <<EOF
# read instead of /etc/rabbitmq/rabbitmq-env.conf (RABBITMQ_CONF_ENV_FILE)
EOF
  echo '[].' > "$ETC/enabled_plugins"
  cat > "$ETC/tacker.conf" <<EOF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $TACKER_PORT
auth_strategy = keystone
api_paste_config = $ETC/api-paste.ini
state_path = $STATE
log_dir = $LOGS
transport_url = rabbit://tacker:$RABBIT_PASS@127.0.0.1:$RABBIT_PORT/
debug = false
# tacker-server's API workers: 1 on a 2-core machine
api_workers = 1
[database]
connection = mysql+pymysql://tacker:$TACKER_DB_PASS@127.0.0.1:$DB_PORT/tacker
[keystone_authtoken]
www_authenticate_uri = $KS_URL
auth_url = $KS_URL
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = tacker
password = $TACKER_SERVICE_PASS
[tacker]
vnflcm_mgmt_driver = vnflcm_noop,mgmt-drivers-heatsible
[vim_keys]
openstack = $RUN/vim-keys
use_barbican = false
# Tacker 16 registers a Kubernetes VIM only through its key manager (false:
# "Barbican must be enabled for VIM ..."); the bed's stand-in for Barbican is
# testbed/tacker/keymgr/bed_keymgr.py (docs/testbed.md, "Tacker")
[k8s_vim]
use_barbican = true
[key_manager]
api_class = bed_keymgr.FileKeyManager
[glance_store]
stores = file
default_store = file
filesystem_store_datadir = $STATE/csar_files
[vnf_package]
vnf_package_csar_path = $STATE/vnfpackages
[vnf_lcm]
endpoint_url = $TACKER_URL/
# v1's OpenStack infra driver polls Heat every stack_retry_wait seconds
# (default 10, 60 tries): the bed's stand-in stacks settle in 1-5 s, so each
# create, update, scale or delete waited up to 10 s for nothing (the e2e
# tests' measurements, docs/testbed.md). The same 300 s bound, polled every 2 s.
[openstack_vim]
stack_retry_wait = 2
stack_retries = 150
[oslo_concurrency]
lock_path = $STATE/lock
[oslo_messaging_notifications]
driver = noop
[oslo_policy]
enforce_new_defaults = false
enforce_scope = false
EOF
  cp "$VENV/etc/tacker/api-paste.ini" "$ETC/api-paste.ini"
  # The shim's configuration: tacker-conductor's environment (contrib/tacker/README.md).
  cat > "$RUN/server.env" <<EOF
PYTHONPATH=$HERE/keymgr
BED_KEYMGR_DIR=$RUN/keymgr
EOF
  cat > "$RUN/conductor.env" <<EOF
PYTHONPATH=$HERE/keymgr
BED_KEYMGR_DIR=$RUN/keymgr
HEATSIBLE_BIN=$RUN/bin/heatsible
HEATSIBLE_KNOWN_HOSTS=$ROOT/testbed/run/known_hosts
HEATSIBLE_STATE_DIR=$RUN/heatsible-state
OS_CLIENT_CONFIG_FILE=$HEAT_RUN/clouds.yaml
OS_CLOUD=bed
PATH=$RUN/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EOF
  cat > "$RUN/env" <<EOF
TACKER_URL=$TACKER_URL
TACKER_VENV=$VENV
TACKER_CONF=$ETC/tacker.conf
TACKER_LOGS=$LOGS
TACKER_CONDUCTOR_ENV=$RUN/conductor.env
OS_AUTH_URL=$KS_URL/v3
OS_USERNAME=admin
OS_PASSWORD=$ADMIN_PASS
OS_PROJECT_NAME=admin
OS_USER_DOMAIN_NAME=Default
OS_PROJECT_DOMAIN_NAME=Default
OS_REGION_NAME=RegionOne
OS_IDENTITY_API_VERSION=3
EOF
  )
  mkdir -p "$RUN/bin"
}

# The networks the VNF packages' requests name (extVirtualLinks[].resourceId):
# the Heat stand-ins' pools give their ports the bed hosts' addresses, so the
# stack Tacker creates lands on the bed's hosts (docs/testbed.md, "Tacker").
NET_MASTER=1b0e8a5c-7d21-4c3e-9f00-0a0a0a0a0012
NET_WORKER=1b0e8a5c-7d21-4c3e-9f00-0a0a0a0a0020
NET_STORAGE=1b0e8a5c-7d21-4c3e-9f00-0a0a0a0a0011
NET_LB=1b0e8a5c-7d21-4c3e-9f00-0a0a0a0a0013
bed_hooks() {
  mkdir -p "$HEAT_RUN/pools.d" "$HEAT_RUN/hooks"
  cat > "$HEAT_RUN/pools.d/tacker.json.tmp" <<EOF
{"networks": {"$NET_MASTER": ["10.231.0.12"],
              "$NET_WORKER": ["10.231.0.20-10.231.0.83"],
              "$NET_STORAGE": ["10.231.0.11"],
              "$NET_LB": ["10.231.0.13"]}}
EOF
  mv "$HEAT_RUN/pools.d/tacker.json.tmp" "$HEAT_RUN/pools.d/tacker.json"
  ln -sfn "$HERE/volume-hook.sh" "$HEAT_RUN/hooks/volume"
  ln -sfn "$HERE/server-hook.sh" "$HEAT_RUN/hooks/server"
  { echo "TACKER_NET_MASTER=$NET_MASTER"; echo "TACKER_NET_WORKER=$NET_WORKER"
    echo "TACKER_NET_STORAGE=$NET_STORAGE"; echo "TACKER_NET_LB=$NET_LB"; } >> "$RUN/env"
}

# ---------------------------------------------------------------- services
layout_ok() { [ "$(cat "$PIDS/$1.layout" 2>/dev/null)" = "$CONF_LAYOUT" ]; }
rabbit_ok() { alive "$PIDS/rabbitmq.pid" && port_open "$RABBIT_PORT"; }
server_ok() { alive "$PIDS/tacker-server.pid" && curl -sf -m 5 "$TACKER_URL/" >/dev/null 2>&1; }
conductor_ok() { alive "$PIDS/tacker-conductor.pid"; }
glance_ok() { alive "$PIDS/glance.pid" && curl -sf -m 5 "$GLANCE_URL/versions" >/dev/null 2>&1; }
hooks_ok() { [ "$(readlink "$HEAT_RUN/hooks/volume" 2>/dev/null)" = "$HERE/volume-hook.sh" ] && [ "$(readlink "$HEAT_RUN/hooks/server" 2>/dev/null)" = "$HERE/server-hook.sh" ]; }
db_ok() { mariadb --socket="$HEAT_RUN/mysqld.sock" -uroot -N -e 'SHOW TABLES IN tacker LIKE "vnf_instances"' 2>/dev/null | grep -q vnf_instances; }

rabbit_env() {
  exec env RABBITMQ_CONF_ENV_FILE="$ETC/rabbitmq-env.conf" RABBITMQ_CONFIG_FILE="$ETC/rabbitmq" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$ETC/enabled_plugins" RABBITMQ_NODENAME=tacker-bed@localhost \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$RABBIT_PORT" RABBITMQ_DIST_PORT="$RABBIT_DIST_PORT" \
    ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$EPMD_PORT" RABBITMQ_MNESIA_BASE="$RUN/rabbitmq/mnesia" \
    RABBITMQ_LOG_BASE="$LOGS" RABBITMQ_PID_FILE="$PIDS/rabbitmq.beam.pid" HOME="$RUN/rabbitmq" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none" "$@"
}

start_rabbit() {
  stop "$PIDS/rabbitmq.pid" rabbitmq
  # a fresh node each time: default_user is created on an empty database
  rm -rf "$RUN/rabbitmq/mnesia"
  local srv f; srv=""
  for f in /usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server; do [ -x "$f" ] && srv=$f; done
  [ -x "$srv" ] || die "no rabbitmq-server: run '$0 install'"
  rm -f "$PIDS/rabbitmq.beam.pid"
  ( rabbit_env setsid "$srv" ) > "$LOGS/rabbitmq.out" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  # the Erlang VM writes its own pid (RABBITMQ_PID_FILE): that is the process to stop
  wait_for 60 test -s "$PIDS/rabbitmq.beam.pid" || die "rabbitmq did not start in 60 s, see $LOGS/rabbitmq.out"
  cp "$PIDS/rabbitmq.beam.pid" "$PIDS/rabbitmq.pid"
  wait_for 90 rabbit_ok || die "rabbitmq did not listen on 127.0.0.1:$RABBIT_PORT in 90 s, see $LOGS/rabbitmq.out"
}

stop_rabbit() {
  stop "$PIDS/rabbitmq.pid" rabbitmq
  # epmd (started by the Erlang VM on our port, daemonized): its pid from the listener
  local p; p=$(ss -Hltnp "sport = :$EPMD_PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 || true)
  if [ -n "$p" ] && grep -q epmd "/proc/$p/comm" 2>/dev/null; then kill "$p" 2>/dev/null || true; log "stopped epmd (pid $p)"; fi
  rm -f "$PIDS/rabbitmq.beam.pid"
}

fresh_db() {
  # Tacker's database in the bed's MariaDB (heat.sh's, recreated at its fresh up)
  mariadb --socket="$HEAT_RUN/mysqld.sock" -uroot <<EOF
DROP DATABASE IF EXISTS tacker; CREATE DATABASE tacker CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS 'tacker'@'127.0.0.1' IDENTIFIED BY '$TACKER_DB_PASS';
ALTER USER 'tacker'@'127.0.0.1' IDENTIFIED BY '$TACKER_DB_PASS';
GRANT ALL ON tacker.* TO 'tacker'@'127.0.0.1';
EOF
  # what belonged to the old database goes with it
  rm -rf "$STATE" "$RUN/vim-keys" "$RUN/heatsible-state" "$RUN/keymgr"
  mkdir -p "$STATE/vnfpackages" "$STATE/csar_files" "$STATE/lock" "$RUN/vim-keys" "$RUN/heatsible-state"; chmod 700 "$RUN/vim-keys" "$RUN/heatsible-state"
  "$VENV/bin/tacker-db-manage" --config-file "$ETC/tacker.conf" upgrade head > "$LOGS/tacker-db-manage.log" 2>&1 \
    || die "tacker-db-manage upgrade head failed, see $LOGS/tacker-db-manage.log"
}

register_keystone() {
  OS_AUTH_URL=$KS_URL/v3 ADMIN_PASS=$ADMIN_PASS SERVICE_PASS=$TACKER_SERVICE_PASS TACKER_URL=$TACKER_URL GLANCE_URL=$GLANCE_URL \
    "$VENV/bin/python" - > "$LOGS/keystone-register.log" 2>&1 <<'EOF' || die "registering tacker in keystone failed, see $LOGS/keystone-register.log"
import os
from keystoneauth1.identity import v3
from keystoneauth1 import session
from keystoneclient.v3 import client
auth = v3.Password(auth_url=os.environ["OS_AUTH_URL"], username="admin",
                   password=os.environ["ADMIN_PASS"], project_name="admin",
                   user_domain_id="default", project_domain_id="default")
ks = client.Client(session=session.Session(auth=auth))
pw = os.environ["SERVICE_PASS"]
def one(lst): return lst[0] if lst else None
admin_role = one(ks.roles.list(name="admin"))
service = one(ks.projects.list(name="service")) or ks.projects.create("service", "default")
user = one(ks.users.list(name="tacker", domain="default")) or ks.users.create("tacker", domain="default", password=pw)
ks.users.update(user, password=pw)
ks.roles.grant(admin_role, user=user, project=service)
svc = one(ks.services.list(type="nfv-orchestration")) or ks.services.create("tacker", type="nfv-orchestration")
def endpoints(svc, url):
    eps = ks.endpoints.list(service=svc)
    if [e.url for e in eps] != [url] * 3:
        for e in eps:
            ks.endpoints.delete(e)
        for iface in ("public", "internal", "admin"):
            ks.endpoints.create(svc, url, interface=iface, region="RegionOne")
endpoints(svc, os.environ["TACKER_URL"] + "/")
# the Glance stand-in (glance/bed_glance.py): Tacker's v2 NFVO lists images at heal and scale-out grants
img = one(ks.services.list(type="image")) or ks.services.create("glance", type="image")
endpoints(img, os.environ["GLANCE_URL"])
print("keystone: tacker user, services nfv-orchestration and image (the Glance stand-in) and their endpoints registered")
EOF
}

start_server() {
  stop "$PIDS/tacker-server.pid" tacker-server
  # shellcheck disable=SC2046  # KEY=value lines without spaces
  env $(grep -E '^[A-Z_]+=' "$RUN/server.env") setsid "$VENV/bin/tacker-server" --config-file "$ETC/tacker.conf" --log-file "$LOGS/tacker-server.log" \
    >> "$LOGS/tacker-server.out" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$PIDS/tacker-server.pid"
  echo "$CONF_LAYOUT" > "$PIDS/tacker-server.layout"
  wait_for 120 server_ok || die "tacker-server did not answer on $TACKER_URL in 120 s, see $LOGS/tacker-server.log"
}

start_conductor() {
  stop "$PIDS/tacker-conductor.pid" tacker-conductor
  : > "$LOGS/tacker-conductor.log.start"
  local envs=("$RUN/conductor.env"); [ -f "$RUN/conductor.env.local" ] && envs+=("$RUN/conductor.env.local")
  # shellcheck disable=SC2046  # KEY=value lines without spaces
  env $(cat "${envs[@]}" | grep -E '^[A-Z_]+=' ) setsid "$VENV/bin/tacker-conductor" --config-file "$ETC/tacker.conf" \
    --log-file "$LOGS/tacker-conductor.log" >> "$LOGS/tacker-conductor.out" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$PIDS/tacker-conductor.pid"
  echo "$CONF_LAYOUT" > "$PIDS/tacker-conductor.layout"
  wait_for 120 conductor_ready || die "tacker-conductor did not connect to RabbitMQ in 120 s, see $LOGS/tacker-conductor.log"
}
# the conductor consumes its RPC topic: its queue has a consumer
conductor_ready() {
  alive "$PIDS/tacker-conductor.pid" || return 1
  local ctl="" f
  for f in /usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmqctl; do [ -x "$f" ] && ctl=$f; done
  # the CLI itself (not Debian's wrapper, which runs it as user rabbitmq with another cookie)
  ( rabbit_env "$ctl" -q list_queues name consumers ) 2>/dev/null | awk '$1 == "TACKER_CONDUCTOR" && $2 > 0 {f=1} END {exit !f}'
}

# The Glance stand-in (docs/testbed.md): Debian's Python, standard library only.
start_glance() {
  stop "$PIDS/glance.pid" glance
  mkdir -p "$RUN/glance"
  setsid /usr/bin/python3 "$HERE/glance/bed_glance.py" --port "$GLANCE_PORT" --dir "$RUN/glance" --keystone "$KS_URL" \
    >> "$LOGS/glance.out" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$PIDS/glance.pid"
  sha256sum < "$HERE/glance/bed_glance.py" | cut -c1-16 > "$PIDS/glance.sum"
  wait_for 30 glance_ok || die "the Glance stand-in did not answer on $GLANCE_URL in 30 s, see $LOGS/glance.out"
}
glance_current() { [ "$(cat "$PIDS/glance.sum" 2>/dev/null)" = "$(sha256sum < "$HERE/glance/bed_glance.py" | cut -c1-16)" ]; }

vim_ok() {
  [ -f "$RUN/env" ] || return 1
  "$VENV/bin/python" "$HERE/tackerctl.py" vim-check > /dev/null 2>&1
}
register_vim() {
  "$VENV/bin/python" "$HERE/tackerctl.py" vim-register > "$LOGS/vim-register.log" 2>&1 \
    || { cat "$LOGS/vim-register.log" >&2; die "registering the bed's OpenStack as Tacker's default VIM failed"; }
  log "$(tail -1 "$LOGS/vim-register.log")"
}

rss() {
  local pids=() f p
  for f in rabbitmq tacker-server tacker-conductor glance; do
    if alive "$PIDS/$f.pid"; then
      p=$(cat "$PIDS/$f.pid"); pids+=("$p")
      while read -r c; do [ -n "$c" ] && pids+=("$c"); done < <(pgrep -P "$p" || true)
    fi
  done
  [ ${#pids[@]} -gt 0 ] || { echo "  (nothing running)"; return 0; }
  ps -o pid=,rss=,comm= -p "$(IFS=,; echo "${pids[*]}")" |
    awk '{printf "  %-8s %6.0f MiB %s\n",$1,$2/1024,$3; s+=$2} END {printf "  total    %6.0f MiB\n", s/1024}'
}

do_up() {
  local t0 t fresh=0; t0=$(now)
  lock
  find_venv
  [ -f "$VENV/.complete" ] || die "no Tacker venv ($VENV): run '$0 install' first"
  [ -S "$HEAT_RUN/mysqld.sock" ] || die "the bed's MariaDB is not running: run heat.sh up first"
  secrets
  install_shim
  # a conductor that loaded another shim is restarted (Tacker hashes the file it loaded)
  if [ "$SHIM_CHANGED" = 1 ] && alive "$PIDS/tacker-conductor.pid"; then
    log "the shim changed: restarting tacker-conductor"; stop "$PIDS/tacker-conductor.pid" tacker-conductor
  fi
  if rabbit_ok && server_ok && conductor_ok && db_ok && vim_ok && layout_ok tacker-server && layout_ok tacker-conductor && glance_ok && glance_current && hooks_ok; then
    log "already up (healthy): no-op"; return 0
  fi
  write_configs
  bed_hooks
  if ! db_ok; then
    t=$(now); stop "$PIDS/tacker-conductor.pid" tacker-conductor; stop "$PIDS/tacker-server.pid" tacker-server
    fresh_db; fresh=1; log "database tacker made (tacker-db-manage upgrade head) in $(since "$t")s"
  fi
  if ! rabbit_ok; then
    t=$(now); stop "$PIDS/tacker-conductor.pid" tacker-conductor; start_rabbit; log "rabbitmq ready in $(since "$t")s"
  fi
  if ! glance_ok || ! glance_current; then t=$(now); start_glance; log "the Glance stand-in ready in $(since "$t")s"; fi
  t=$(now); register_keystone; log "keystone registration in $(since "$t")s"
  if [ $fresh = 1 ] || ! server_ok || ! layout_ok tacker-server; then t=$(now); start_server; log "tacker-server ready in $(since "$t")s"; fi
  if [ $fresh = 1 ] || ! conductor_ready || ! layout_ok tacker-conductor; then t=$(now); start_conductor; log "tacker-conductor ready in $(since "$t")s"; fi
  if ! vim_ok; then t=$(now); register_vim; log "VIM registered in $(since "$t")s"; fi
  log "up in $(since "$t0")s; env: $RUN/env; RSS:"
  rss >&2
}

do_down() {
  lock
  stop "$PIDS/tacker-conductor.pid" tacker-conductor
  stop "$PIDS/tacker-server.pid" tacker-server
  stop_rabbit
  stop "$PIDS/glance.pid" glance
  if [ -S "$HEAT_RUN/mysqld.sock" ]; then
    mariadb --socket="$HEAT_RUN/mysqld.sock" -uroot -e 'DROP DATABASE IF EXISTS tacker' 2>/dev/null || true
  fi
  # the DB is recreated at each fresh up; keep secrets, configs and logs
  rm -rf "$STATE" "$RUN/vim-keys" "$RUN/heatsible-state" "$RUN/keymgr" "$RUN/rabbitmq/mnesia"
  rm -f "$HEAT_RUN/pools.d/tacker.json" "$HEAT_RUN/hooks/volume" "$HEAT_RUN/hooks/server"
  rm -rf "$RUN/glance"
  log "down"
}

do_status() {
  local rc=0
  if rabbit_ok; then echo "rabbitmq          up   127.0.0.1:$RABBIT_PORT (pid $(cat "$PIDS/rabbitmq.pid"))"; else echo "rabbitmq          down"; rc=1; fi
  if server_ok; then echo "tacker-server     up   $TACKER_URL (pid $(cat "$PIDS/tacker-server.pid"))"; else echo "tacker-server     down"; rc=1; fi
  if alive "$PIDS/tacker-conductor.pid"; then echo "tacker-conductor  up   (pid $(cat "$PIDS/tacker-conductor.pid"))"; else echo "tacker-conductor  down"; rc=1; fi
  if glance_ok; then echo "glance stand-in   up   $GLANCE_URL (pid $(cat "$PIDS/glance.pid"), $(wc -l < "$RUN/glance/calls.log" 2>/dev/null || echo 0) calls)"; else echo "glance stand-in   down"; rc=1; fi
  if [ $rc = 0 ]; then
    if vim_ok; then echo "default VIM       $("$VENV/bin/python" "$HERE/tackerctl.py" vim-check 2>/dev/null)"; else echo "default VIM       none"; rc=1; fi
  fi
  rss
  return $rc
}

# package NAME OUT.zip: testbed/tacker/packages/NAME as a CSAR, with what is not
# kept in the repository added: Scripts/heatsible_mgmt_driver.py (the bytes of the
# shim the venv has: Tacker compares their SHA-256) and ETSI SOL001's type
# definitions (from the installed Tacker: the package imports them).
do_package() {
  local name=${1:?usage: package NAME OUT.zip} out=${2:?usage: package NAME OUT.zip}
  find_venv
  local src=$HERE/packages/$name tmp etsi
  [ -d "$src" ] || die "no package $src"
  etsi=$VENV/lib/python3.11/site-packages/tacker/tests/unit/vnfm/infra_drivers/openstack/data/etsi_nfv
  [ -f "$etsi/etsi_nfv_sol001_vnfd_types.yaml" ] || die "no ETSI SOL001 definitions in $etsi"
  tmp=$(mktemp -d)
  cp -r "$src/." "$tmp/"
  mkdir -p "$tmp/Scripts"
  cp "$("$VENV"/bin/python -c 'import heatsible_mgmt_driver as m; print(m.__file__)')" "$tmp/Scripts/heatsible_mgmt_driver.py"
  cp "$etsi/etsi_nfv_sol001_common_types.yaml" "$etsi/etsi_nfv_sol001_vnfd_types.yaml" "$tmp/Definitions/"
  # A fresh VNFD id for every build: once a VNF of a package was instantiated,
  # Tacker 16 keeps a row of its VNFD id in the legacy vnfd table after the VNF
  # and the package are deleted, and the onboarding of a package with that id
  # fails (DBDuplicateEntry in the conductor's log; the package stays CREATED).
  local old new
  old=$(sed -n 's/^ *descriptor_id: *\([0-9a-f-]\{36\}\) *$/\1/p' "$tmp"/Definitions/*_top.vnfd.yaml | head -1)
  [ -n "$old" ] || die "no descriptor_id in $src/Definitions/*_top.vnfd.yaml"
  new=${TACKER_VNFD_ID:-$(cat /proc/sys/kernel/random/uuid)}
  sed -i "s/$old/$new/g" "$tmp"/Definitions/*.yaml
  rm -f "$out"
  out=$(readlink -f "$out")
  (cd "$tmp" && find . -name __pycache__ -prune -o -type f -print | sed 's|^\./||' | sort | zip -q -X "$out" -@)
  rm -rf "$tmp"
  echo "$out"
}

cmd=${1:-}; shift || true
case "$cmd" in
  install) do_install ;;
  up) do_up ;;
  down) do_down ;;
  status) find_venv; do_status ;;
  rss) rss ;;
  restart-conductor) lock; find_venv; secrets; install_shim; start_conductor; log "conductor restarted" ;;
  openstack)
    find_venv; [ -f "$RUN/env" ] || die "no $RUN/env: run '$0 up'"
    set -a
    # shellcheck disable=SC1091
    . "$RUN/env"
    set +a
    exec "$VENV/bin/openstack" "$@" ;;
  venv) find_venv; echo "$VENV" ;;
  package) do_package "$@" ;;
  *) echo "usage: $0 install|up|down|status|restart-conductor|openstack ARGS...|venv" >&2; exit 2 ;;
esac
