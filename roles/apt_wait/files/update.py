"""Refresh apt's package lists as apt-get does, bounded in time.

Run as root (the role's update task, become) with python3 -c, one module
run:

  update.py VALID_TIME TIMEOUT

When the lists are younger than VALID_TIME seconds (the time the apt module
reads: /var/lib/apt/periodic/update-success-stamp, else the mtime of
/var/lib/apt/lists), nothing runs. Else "apt-get -q update", killed after
TIMEOUT seconds. apt-get leaves out a source that does not answer (a 404, a
refused connection, a bad signature) and reads the others' lists; python-apt,
which the apt module uses, raises instead. The apt_update_report filter
judges the output.

It prints one JSON object and exits 0:

  {"fresh": false, "age": 7260, "rc": 100, "timed_out": false, "took": 1,
   "output": "Ign:1 http://... InRelease\\nErr:2 http://... Release\\n  404  Not Found ...\\nE: ..."}

Written for Python 3.8 (Ubuntu 20.04) and later.
"""

import json
import os
import subprocess
import sys
import time

STAMP = "/var/lib/apt/periodic/update-success-stamp"
LISTS = "/var/lib/apt/lists"


def lists_age(now=None):
    """Seconds since the lists were refreshed, as the apt module reckons it (None: never)."""
    for path in (STAMP, LISTS):
        try:
            return int((now or time.time()) - os.stat(path).st_mtime)
        except OSError:
            continue
    return None


def run(timeout, argv=("apt-get", "-q", "update")):
    start = time.monotonic()
    out = {"fresh": False, "rc": None, "timed_out": False, "output": ""}
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C")
    try:
        p = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           universal_newlines=True, errors="replace", env=env, timeout=max(timeout, 1))
        out["rc"], out["output"] = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out["timed_out"] = True
        text = e.output or ""
        out["output"] = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    except OSError as e:
        out["rc"], out["output"] = 127, "%s: %s" % (argv[0], e)
    out["took"] = int(round(time.monotonic() - start))
    return out


def main(argv):
    valid, timeout = int(argv[0]), int(argv[1])
    age = lists_age()
    if age is not None and 0 <= age < valid:
        out = {"fresh": True}
    else:
        out = run(timeout)
    out["age"] = age
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
