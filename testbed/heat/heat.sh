#!/bin/bash
# heatsible test bed: a real OpenStack Keystone + Heat (Debian packages) on this
# machine, loopback only, no systemd, no Nova/Neutron/Cinder/RabbitMQ.
# Nova/Neutron/Cinder resources are stand-ins from a Heat resource plugin
# (plugin/standin_resources.py) whose addresses come from the bed's pools.
#
#   heat.sh install                 apt packages (idempotent)
#   heat.sh up                      start MariaDB, Keystone, heat-all (healthy: no-op)
#   heat.sh stack-create NAME WORKERS VOLUMES [--pools FILE] [--replace] [--networks M,W,S] [--lb NET] [--masters N] [--vip [--vip-network NET]] [--no-state]
#   heat.sh stack-scale NAME N [--victim MEMBER ...] [--aspect GROUP]   resize a group as Tacker does
#   heat.sh stack-delete NAME
#   heat.sh status                  exit 0 iff everything is up
#   heat.sh down                    stop what `up` started (by pidfile); wipes the DB
#
#   mariadbd   127.0.0.1:25306   own datadir under testbed/run/heat/data/mysql
#   keystone   127.0.0.1:25000   uwsgi (1 process x 4 threads)
#   heat-all   127.0.0.1:28004   api+engine in one process, transport_url=fake://
#
# State: testbed/run/heat/ (env, clouds.yaml, secrets, pools.json,
# allocations.json, stack.json, etc/, data/, logs/, pids/).
# Ports can be changed with HEAT_DB_PORT, HEAT_KS_PORT, HEAT_API_PORT.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUN=$ROOT/testbed/run/heat
ETC=$RUN/etc; DATA=$RUN/data; LOGS=$RUN/logs; PIDS=$RUN/pids
DB_PORT=${HEAT_DB_PORT:-25306}; KS_PORT=${HEAT_KS_PORT:-25000}; HEAT_PORT=${HEAT_API_PORT:-28004}
KS_URL=http://127.0.0.1:$KS_PORT
HEAT_URL=http://127.0.0.1:$HEAT_PORT
PY=/usr/bin/python3   # Debian's python: the OpenStack libraries are Debian packages
export DEBIAN_FRONTEND=noninteractive
# Never send loopback traffic through a proxy a caller may have set.
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost

log() { echo "[heat.sh $(date +%T)] $*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

# wait_for SECONDS CMD...: poll every 0.25 s, bounded.
wait_for() {
  local n=$(( $1 * 4 )); shift
  local i
  for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}

# Our own lock (fd 8) so two heat.sh calls do not race; daemons close fd 8
# and fd 9 (a caller's flock) so they never hold either lock.
lock() {
  mkdir -p "$RUN"
  exec 8>"$RUN/.lock"
  flock -w 900 8 || die "another heat.sh holds $RUN/.lock"
}

alive() { # alive PIDFILE
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# stop PIDFILE NAME: TERM, bounded wait, KILL; only the pid we recorded.
stop() {
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

db_ok()   { alive "$PIDS/mysqld.pid" && mariadb-admin --socket="$RUN/mysqld.sock" -uroot ping >/dev/null 2>&1; }
ks_ok()   { alive "$PIDS/keystone.pid" && curl -sf -m 5 "$KS_URL/v3/" >/dev/null 2>&1; }
heat_ok() { alive "$PIDS/heat-all.pid" && curl -sf -m 5 "$HEAT_URL/" >/dev/null 2>&1; }
# heat-all loaded the plugin as it is now (a changed plugin needs a restart of heat-all)
plugin_sum() { cat "$HERE"/plugin/*.py | sha256sum | cut -c1-16; }
plugin_current() { [ "$(cat "$PIDS/heat-all.plugin" 2>/dev/null)" = "$(plugin_sum)" ]; }

# ---------------------------------------------------------------- install
do_install() {
  local t0; t0=$(now)
  local pkgs=(keystone heat-api heat-engine python3-heatclient python3-openstackclient
              mariadb-server python3-pymysql curl)
  if dpkg-query -W -f='${Status}\n' "${pkgs[@]}" 2>/dev/null | grep -vq 'install ok installed' ||
     [ "$(dpkg-query -W -f='${Status}\n' "${pkgs[@]}" 2>/dev/null | wc -l)" -ne ${#pkgs[@]} ]; then
    # Every debconf question of these packages defaults to "don't configure";
    # be explicit so no package tries to set up a database or an endpoint.
    debconf-set-selections <<'EOF'
keystone keystone/configure_db boolean false
keystone keystone/create-admin-tenant boolean false
keystone keystone/register-endpoint boolean false
heat-common heat/configure_with_debconf boolean false
heat-common heat/configure_db boolean false
heat-common heat/configure_rabbit boolean false
heat-common heat/configure_ksat boolean false
heat-api heat/configure_api-endpoint boolean false
EOF
    # No systemd here: invoke-rc.d does not start the packaged daemons.
    apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${pkgs[@]}"
  else
    log "packages already installed"
  fi
  log "install done in $(since "$t0")s"
}

# ---------------------------------------------------------------- secrets
gen_secret() { head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 24; }

secrets() {
  mkdir -p "$RUN"
  if [ ! -s "$RUN/secrets" ]; then
    ( umask 077
      { echo "DB_PASS=$(gen_secret)"; echo "ADMIN_PASS=$(gen_secret)"; echo "SERVICE_PASS=$(gen_secret)"; } > "$RUN/secrets.tmp"
      mv "$RUN/secrets.tmp" "$RUN/secrets" )
  fi
  # shellcheck disable=SC1091
  . "$RUN/secrets"
}

write_configs() {
  mkdir -p "$ETC" "$DATA" "$LOGS" "$PIDS"
  chmod 700 "$RUN" "$ETC"
  ( umask 077
  cat > "$ETC/keystone.conf" <<EOF
[DEFAULT]
log_file = $LOGS/keystone.log
[database]
connection = mysql+pymysql://os:$DB_PASS@127.0.0.1:$DB_PORT/keystone
[token]
provider = fernet
[fernet_tokens]
key_repository = $DATA/fernet-keys
[fernet_receipts]
key_repository = $DATA/fernet-keys
[credential]
key_repository = $DATA/credential-keys
EOF
  cat > "$ETC/heat.conf" <<EOF
[DEFAULT]
log_file = $LOGS/heat.log
plugin_dirs = $HERE/plugin
# in-process oslo.messaging driver: only valid because api+engine share one
# process (heat-all) and neither forks workers.
transport_url = fake://
num_engine_workers = 1
host = heatsible-bed
region_name_for_services = RegionOne
stack_domain_admin = heat_domain_admin
stack_domain_admin_password = $SERVICE_PASS
stack_user_domain_name = heat
deferred_auth_method = trusts
heat_metadata_server_url = http://127.0.0.1:28000
heat_waitcondition_server_url = http://127.0.0.1:28000/v1/waitcondition
max_nested_stack_depth = 5
# heat-all otherwise waits up to 60 s for in-flight work on SIGTERM
graceful_shutdown_timeout = 5
[heat_all]
enabled_services = api,engine
[heat_api]
bind_host = 127.0.0.1
bind_port = $HEAT_PORT
workers = 1
[database]
connection = mysql+pymysql://os:$DB_PASS@127.0.0.1:$DB_PORT/heat
[keystone_authtoken]
www_authenticate_uri = $KS_URL
auth_url = $KS_URL
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = heat
password = $SERVICE_PASS
[trustee]
auth_type = password
auth_url = $KS_URL
username = heat
password = $SERVICE_PASS
user_domain_name = Default
[clients_keystone]
auth_uri = $KS_URL
[oslo_messaging_notifications]
driver = noop
EOF
  cat > "$RUN/env" <<EOF
OS_AUTH_URL=$KS_URL/v3
OS_USERNAME=admin
OS_PASSWORD=$ADMIN_PASS
OS_PROJECT_NAME=admin
OS_USER_DOMAIN_NAME=Default
OS_PROJECT_DOMAIN_NAME=Default
OS_REGION_NAME=RegionOne
OS_IDENTITY_API_VERSION=3
EOF
  cat > "$RUN/clouds.yaml" <<EOF
clouds:
  bed:
    auth:
      auth_url: $KS_URL/v3
      username: admin
      password: "$ADMIN_PASS"
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
    interface: public
EOF
  )
  bed_pools
  lb_pool
}

# The default pools: the bed's addresses (docs/testbed.md), 64 workers at
# .20-.83; stack-create --pools replaces the file. A pools.json that is the
# default of before (16 workers, .20-.35, written by an older heat.sh) is
# replaced by this one; any other file is left as it is.
POOLS_DEFAULT='{
  "networks": {
    "net_master": ["10.231.0.12"],
    "net_worker": ["10.231.0.20-10.231.0.83"],
    "net_storage": ["10.231.0.11"]
  },
  "floating": {"10.231.0.0/24": "10.231.1.0/24"}
}'
POOLS_OLD_DEFAULT='{"floating":{"10.231.0.0/24":"10.231.1.0/24"},"networks":{"net_master":["10.231.0.12"],"net_storage":["10.231.0.11"],"net_worker":["10.231.0.20-10.231.0.35"]}}'
bed_pools() {
  mkdir -p "$RUN"
  if [ -s "$RUN/pools.json" ] && [ "$($PY -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True, separators=(",", ":")))' \
       "$RUN/pools.json" 2>/dev/null)" != "$POOLS_OLD_DEFAULT" ]; then return 0; fi
  [ -s "$RUN/pools.json" ] && log "pools.json: net_worker 10.231.0.20-10.231.0.35 -> 10.231.0.20-10.231.0.83 (64 workers)"
  printf '%s\n' "$POOLS_DEFAULT" > "$RUN/pools.json.tmp"
  mv "$RUN/pools.json.tmp" "$RUN/pools.json"
}

# The external load balancer's network (stack-create --lb net_lb): its own
# pool file beside pools.json, so a pools.json written before it existed (or
# replaced with --pools) keeps working.
lb_pool() {
  mkdir -p "$RUN/pools.d"
  [ -s "$RUN/pools.d/bed-lb.json" ] && return 0
  printf '{"networks": {"net_lb": ["10.231.0.13"]}}\n' > "$RUN/pools.d/bed-lb.json.tmp"
  mv "$RUN/pools.d/bed-lb.json.tmp" "$RUN/pools.d/bed-lb.json"
}

# ---------------------------------------------------------------- services
start_mariadb() {
  # MariaDB data is not kept across `up`s (docs/testbed.md): a DB that is not
  # running (no live pid in the pidfile) is recreated, with everything that
  # depends on it.
  stop "$PIDS/mysqld.pid" mariadbd
  rm -rf "$DATA/mysql" "$DATA/fernet-keys" "$DATA/credential-keys" "$RUN/allocations.json" "$RUN/stack.json"
  mkdir -p "$DATA/mysql"
  mariadb-install-db --no-defaults --datadir="$DATA/mysql" --user="$(id -un)" \
    --auth-root-authentication-method=normal --skip-test-db > "$LOGS/mysql-install.log" 2>&1 \
    || die "mariadb-install-db failed, see $LOGS/mysql-install.log"
  # Every daemon here starts with fds 3-9 closed: a caller's lock (bed's on
  # fd 9, flock(1)'s on fd 3) must not outlive the caller in a daemon.
  setsid mariadbd --no-defaults --datadir="$DATA/mysql" --user="$(id -un)" \
    --bind-address=127.0.0.1 --port="$DB_PORT" --socket="$RUN/mysqld.sock" \
    --pid-file="$PIDS/mysqld.pid" --innodb-buffer-pool-size=64M --max-connections=200 \
    --skip-name-resolve --performance-schema=OFF --log-error="$LOGS/mysqld.err" \
    > /dev/null 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$PIDS/mysqld.pid"
  wait_for 60 db_ok || die "mariadb did not start in 60 s, see $LOGS/mysqld.err"
  mariadb --socket="$RUN/mysqld.sock" -uroot <<EOF
CREATE DATABASE IF NOT EXISTS keystone; CREATE DATABASE IF NOT EXISTS heat;
CREATE USER IF NOT EXISTS 'os'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON keystone.* TO 'os'@'127.0.0.1'; GRANT ALL ON heat.* TO 'os'@'127.0.0.1';
EOF
}

start_keystone() {
  stop "$PIDS/keystone.pid" keystone
  local K="keystone-manage --config-file $ETC/keystone.conf"
  # keystone-manage prints a harmless eventlet traceback at exit; all steps are idempotent.
  { $K db_sync &&
    $K fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" &&
    $K credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" &&
    $K bootstrap --bootstrap-password "$ADMIN_PASS" --bootstrap-username admin \
      --bootstrap-project-name admin --bootstrap-role-name admin \
      --bootstrap-service-name keystone --bootstrap-region-id RegionOne \
      --bootstrap-admin-url "$KS_URL/v3/" --bootstrap-public-url "$KS_URL/v3/" \
      --bootstrap-internal-url "$KS_URL/v3/"; } > "$LOGS/keystone-manage.log" 2>&1 \
    || die "keystone-manage failed, see $LOGS/keystone-manage.log"
  # uwsgi's --http-socket does no keep-alive: "Connection: close" stops
  # python-requests clients from reusing a socket uwsgi already closed.
  OS_KEYSTONE_CONFIG_FILES=$ETC/keystone.conf setsid uwsgi --plugin python3 \
    --http-socket "127.0.0.1:$KS_PORT" --wsgi-file /usr/bin/keystone-wsgi-public \
    --master --processes 1 --threads 4 --enable-threads --lazy-apps --die-on-term \
    --buffer-size 65535 --add-header "Connection: close" \
    > "$LOGS/keystone-uwsgi.log" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$PIDS/keystone.pid"
  wait_for 90 ks_ok || die "keystone did not answer in 90 s, see $LOGS/keystone-uwsgi.log"
  register_heat
}

register_heat() {
  # One python process instead of ~12 `openstack` CLI calls (45 s -> 3 s). Idempotent.
  OS_AUTH_URL=$KS_URL/v3 ADMIN_PASS=$ADMIN_PASS SERVICE_PASS=$SERVICE_PASS HEAT_URL=$HEAT_URL \
    $PY - > "$LOGS/keystone-register.log" 2>&1 <<'EOF' || die "registering heat in keystone failed, see $LOGS/keystone-register.log"
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
heat = one(ks.users.list(name="heat", domain="default")) or ks.users.create("heat", domain="default", password=pw)
ks.users.update(heat, password=pw)
ks.roles.grant(admin_role, user=heat, project=service)
svc = one(ks.services.list(type="orchestration")) or ks.services.create("heat", type="orchestration")
if not ks.endpoints.list(service=svc):
    for iface in ("public", "internal", "admin"):
        ks.endpoints.create(svc, os.environ["HEAT_URL"] + "/v1/%(tenant_id)s",
                            interface=iface, region="RegionOne")
dom = one(ks.domains.list(name="heat")) or ks.domains.create("heat", description="Heat stack projects and users")
dadm = one(ks.users.list(name="heat_domain_admin", domain=dom)) or ks.users.create("heat_domain_admin", domain=dom, password=pw)
ks.users.update(dadm, password=pw)
ks.roles.grant(admin_role, user=dadm, domain=dom)
owner = one(ks.roles.list(name="heat_stack_owner")) or ks.roles.create("heat_stack_owner")
one(ks.roles.list(name="heat_stack_user")) or ks.roles.create("heat_stack_user")
admin_user = one(ks.users.list(name="admin", domain="default"))
admin_proj = one(ks.projects.list(name="admin"))
ks.roles.grant(owner, user=admin_user, project=admin_proj)
print("keystone: heat user/service/endpoints/domain registered")
EOF
}

start_heat() {
  stop "$PIDS/heat-all.pid" heat-all
  heat-manage --config-file "$ETC/heat.conf" db_sync > "$LOGS/heat-manage.log" 2>&1 \
    || die "heat-manage db_sync failed, see $LOGS/heat-manage.log"
  HEATSIBLE_POOLS=$RUN/pools.json HEATSIBLE_ALLOC=$RUN/allocations.json \
    setsid heat-all --config-file "$ETC/heat.conf" >> "$LOGS/heat-all.out" 2>&1 < /dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! > "$PIDS/heat-all.pid"
  plugin_sum > "$PIDS/heat-all.plugin"
  wait_for 120 heat_ok || die "heat-all did not answer in 120 s, see $LOGS/heat.log"
}

rss() {
  local pids=() f p
  for f in mysqld keystone heat-all; do
    if alive "$PIDS/$f.pid"; then
      p=$(cat "$PIDS/$f.pid"); pids+=("$p")
      # uwsgi workers are children of the master
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
  if db_ok && ks_ok && heat_ok && plugin_current; then log "already up (healthy): no-op"; return 0; fi
  for c in mariadb-install-db mariadbd keystone-manage uwsgi heat-all heat-manage curl; do
    command -v "$c" >/dev/null || die "$c not found: run '$0 install' first"
  done
  secrets
  write_configs
  if alive "$PIDS/mysqld.pid"; then
    # Running: never wipe a live database because one ping failed (load).
    wait_for 30 db_ok || die "mariadbd (pid $(cat "$PIDS/mysqld.pid")) runs but does not answer on $RUN/mysqld.sock; see $LOGS/mysqld.err, or run '$0 down' first"
  else
    t=$(now); start_mariadb; fresh=1; log "mariadb ready in $(since "$t")s"
  fi
  # A service that runs but does not answer yet may be starting or stopping:
  # give it a moment before restarting it.
  if [ $fresh = 0 ] && alive "$PIDS/keystone.pid"; then wait_for 15 ks_ok || true; fi
  if [ $fresh = 0 ] && alive "$PIDS/heat-all.pid"; then wait_for 15 heat_ok || true; fi
  if [ $fresh = 1 ] || ! ks_ok; then t=$(now); start_keystone; log "keystone ready in $(since "$t")s"; fi
  if [ $fresh = 1 ] || ! heat_ok || ! plugin_current; then
    [ $fresh = 0 ] && heat_ok && log "the stand-in plugin changed: restarting heat-all"
    t=$(now); start_heat; log "heat-all ready in $(since "$t")s"
  fi
  log "up in $(since "$t0")s; env: $RUN/env, clouds.yaml: $RUN/clouds.yaml (cloud 'bed'); RSS:"
  rss >&2
}

do_down() {
  lock
  stop "$PIDS/heat-all.pid" heat-all
  stop "$PIDS/keystone.pid" keystone   # --die-on-term: the master reaps its worker
  stop "$PIDS/mysqld.pid" mariadbd
  # The DB is recreated at each up; keep secrets, pools and logs.
  rm -rf "$DATA" "$RUN/allocations.json" "$RUN/allocations.json.lock" "$RUN/stack.json" "$RUN/mysqld.sock"
  log "down"
}

do_status() {
  local rc=0
  if db_ok; then echo "mariadb   up   127.0.0.1:$DB_PORT (pid $(cat "$PIDS/mysqld.pid"))"; else echo "mariadb   down"; rc=1; fi
  if ks_ok; then echo "keystone  up   $KS_URL/v3 (pid $(cat "$PIDS/keystone.pid"))"; else echo "keystone  down"; rc=1; fi
  if heat_ok; then echo "heat-all  up   $HEAT_URL (pid $(cat "$PIDS/heat-all.pid"))"; else echo "heat-all  down"; rc=1; fi
  rss
  return $rc
}

stackctl() {
  if ! heat_ok || ! ks_ok; then die "Keystone/Heat are not up: run '$0 up'"; fi
  [ -f "$RUN/env" ] || die "no $RUN/env: run '$0 up'"
  set -a
  # shellcheck disable=SC1091  # written by up
  . "$RUN/env"
  set +a
  HEAT_RUN=$RUN $PY "$HERE/stackctl.py" "$@"
}

cmd=${1:-}; shift || true
case "$cmd" in
  install) do_install ;;
  up) do_up ;;
  down) do_down ;;
  status) do_status ;;
  rss) rss ;;
  stack-create)
    [ $# -ge 3 ] || die "usage: $0 stack-create NAME WORKERS VOLUMES [--pools FILE] [--replace] [--networks M,W,S] [--lb NET] [--masters N] [--vip [--vip-network NET]] [--no-state]"
    lock
    bed_pools
    lb_pool
    stackctl create "$@" ;;
  stack-scale)
    [ $# -ge 2 ] || die "usage: $0 stack-scale NAME N [--victim MEMBER ...] [--aspect GROUP]"
    lock
    stackctl scale "$@" ;;
  stack-delete)
    [ $# -eq 1 ] || die "usage: $0 stack-delete NAME"
    lock
    stackctl delete "$1" ;;
  *) echo "usage: $0 install|up|down|status|stack-create NAME WORKERS VOLUMES [--pools FILE] [--replace] [--networks M,W,S] [--lb NET] [--masters N] [--vip [--vip-network NET]] [--no-state]|stack-scale NAME N [--victim MEMBER ...] [--aspect GROUP]|stack-delete NAME" >&2; exit 2 ;;
esac
