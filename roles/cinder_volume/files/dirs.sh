#!/bin/sh
# cinder_volume: look for the export directories (read-only, one round trip).
#
# Usage: dirs.sh DIR...
# Prints one key and its value per line: "dir DIR" (a directory is there)
# or "missing DIR" (nothing is there: the role creates it). Anything else
# at DIR (a file, a dangling symlink): a message on stderr, exit 3, and the
# role stops before it creates anything.
for d; do
  if [ -d "$d" ]; then
    echo "dir $d"
  elif [ -e "$d" ] || [ -L "$d" ]; then
    echo "$d exists but is not a directory" >&2
    exit 3
  else
    echo "missing $d"
  fi
done
