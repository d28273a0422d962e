#!/bin/sh
# nfs_server: mark the configuration as written and not yet applied (before
# any configuration file is written; tasks/main.yml removes the mark once
# the handlers applied it).
#
# Usage: mark.sh FILE
set -eu
mkdir -p -- "${1%/*}"
echo "written by heatsible, not applied yet" > "$1"
