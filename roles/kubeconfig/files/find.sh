#!/bin/sh
# Which admin kubeconfig can kubectl use on this master, and as whom?
# Runs as root (become), with the SSH user in SUDO_USER. Read-only; always
# exits 0 and prints one JSON object:
#   {"user": "ubuntu", "kubectl": "/usr/local/bin/kubectl",
#    "paths": [{"path": "/home/ubuntu/.kube/config", "state": "missing"}, ...]}
# state: user (a file the SSH user can read), root (a file only root can
# read), missing, not-a-file, unreadable (not even root reads it).
# The kubeconfig filter plugin picks from this; nothing is judged here.
#
# Usage: find.sh KUBECTL PATH...   (a PATH starting with ~/ is in the SSH
# user's home directory)
set -u

kubectl=$1
shift
user=${SUDO_USER:-$(id -un)}
home=$(getent passwd "$user" | cut -d: -f6)

# JSON string of $1 (the paths are checked by heatsible and by the role:
# absolute, no control characters; backslash and quote escaped all the same).
json_str() {
  printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"
}

# Can the SSH user read $1? Tested as that user, not guessed from the mode
# bits (ACLs, group membership, a parent directory it cannot enter).
user_reads() {
  if [ "$user" = root ] || [ "$(id -u)" != 0 ]; then
    [ -r "$1" ]
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$user" -- test -r "$1" 2>/dev/null
  else
    sudo -n -u "$user" test -r "$1" 2>/dev/null
  fi
}

state_of() {
  if [ ! -e "$1" ]; then
    echo missing
  elif [ ! -f "$1" ]; then
    echo not-a-file
  elif user_reads "$1"; then
    echo user
  elif [ -r "$1" ]; then
    echo root
  else
    echo unreadable
  fi
}

printf '{"user": %s, "kubectl": %s, "paths": [' "$(json_str "$user")" "$(json_str "$(command -v "$kubectl" 2>/dev/null || true)")"
sep=
for p in "$@"; do
  case $p in
    \~/*) p=$home/${p#\~/} ;;
  esac
  printf '%s{"path": %s, "state": "%s"}' "$sep" "$(json_str "$p")" "$(state_of "$p")"
  sep=', '
done
printf ']}\n'
