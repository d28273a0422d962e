#!/bin/sh
# cloud-init STAND-IN (testbed/firstboot, docs/testbed.md): not cloud-init.
# Installed as /usr/bin/cloud-init on the bed hosts that boot like a fresh
# cloud VM (BED_FIRST_BOOT_HOSTS, bed first-boot). It answers
# "cloud-init status [--wait] [--long]" as cloud-init 23.4 and later do
# (Ubuntu 20.04, 22.04 and 24.04 get those through their updates), from the
# same files the real one reads:
#   /run/cloud-init/status.json without result.json   running
#   /run/cloud-init/result.json                        done (error if it lists errors)
#   neither                                            not started
# Output: "status: X"; --wait prints a dot every 0.25 s while cloud-init is
# not started or running, then a blank line and the status, as the real
# one (whose --wait never returns when cloud-init never starts). Exit 0,
# 1 for error. Every call is recorded in /var/log/bed-cloud-init.log.
set -u
run=/run/cloud-init
log=/var/log/bed-cloud-init.log

printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$*" >> "$log" 2>/dev/null || true

usage() {
  echo "usage: /usr/bin/cloud-init [-h] [--version] [--debug] [--force] {init,modules,single,query,features,analyze,devel,collect-logs,clean,status,schema} ..." >&2
  echo "/usr/bin/cloud-init: error: $1" >&2
  exit 2
}

state() {
  if [ -e "$run/result.json" ]; then
    if grep -q '"errors": \[ *"' "$run/result.json"; then echo error; else echo 'done'; fi
  elif [ -e "$run/status.json" ]; then
    echo running
  else
    echo "not started"
  fi
}

[ $# -gt 0 ] || usage "the following arguments are required: subcommand"
case $1 in
  --version) echo "/usr/bin/cloud-init 24.4.1-0ubuntu0~24.04.1 (bed stand-in)"; exit 0 ;;
  status) shift ;;
  *) usage "argument subcommand: invalid choice: '$1' (the bed's stand-in answers status only)" ;;
esac
wait='' long=''
for a in "$@"; do
  case $a in
    -w | --wait) wait=1 ;;
    -l | --long) long=1 ;;
    *) usage "unrecognized arguments: $a" ;;
  esac
done
if [ -n "$wait" ]; then
  while :; do
    case $(state) in running | "not started") printf . ; sleep 0.25 ;; *) break ;; esac
  done
  echo
fi
st=$(state)
echo "status: $st"
if [ -n "$long" ]; then
  echo "extended_status: $st"
  echo "boot_status_code: enabled-by-generator"
  if [ "$st" = running ]; then echo "detail: Running in stage: modules-final"
  else echo "detail: DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud]"; fi
  echo "errors: []"
  echo "recoverable_errors: {}"
fi
[ "$st" = error ] && exit 1
exit 0
