"""What keeps apt from running on this host, and waiting until nothing does.

Run as root (the role's raw task, become) with python3 -c, one round trip:

  wait.py probe TIMEOUT DELAY LOCK...   report at once
  wait.py wait  TIMEOUT DELAY LOCK...   wait (at most TIMEOUT seconds in all)
                                        for cloud-init, then for the locks

It prints one JSON object and exits 0; the apt_wait filter plugin judges it:

  {"cloud_init": {"present": true, "status": "running", "rc": 0,
                  "timed_out": false, "waited": 0},
   "locks": [{"path": "/var/lib/dpkg/lock-frontend", "pid": 1234,
              "holder": "apt-get"}],          # the locks held at the end
   "waited_for": [...],                       # wait: the locks held at first
   "waited": 118, "timed_out": ""}            # wait: "", "cloud-init", "locks"

A lock is held when fcntl(F_GETLK) says another process holds a write lock
on it, the lock apt and dpkg take (F_SETLK), so nothing here ever takes it:
testing by locking would make a starting apt-get fail. cloud-init is only
waited for while "cloud-init status" says running: sshd starts after
cloud-init has begun, so "not started" (or "not run") when we log in means
it never will, and "cloud-init status --wait" would block until the timeout.
Written for Python 3.8 (Ubuntu 20.04) and later.
"""

import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import time

# struct flock on Linux (LP64): short l_type, short l_whence, off_t l_start,
# off_t l_len, pid_t l_pid; native alignment pads it as the kernel does.
FLOCK = "@hhqqi"


def lock_holder(path):
    """(held, pid, name) for a lock on path: (False, 0, "") when free.

    pid is -1 for an open file description lock (no owning process) and 0
    for a holder outside this PID namespace.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    except FileNotFoundError:
        return False, 0, ""
    try:
        req = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        got = fcntl.fcntl(fd, fcntl.F_GETLK, req)
    finally:
        os.close(fd)
    l_type, _, _, _, pid = struct.unpack(FLOCK, got)
    if l_type == fcntl.F_UNLCK:
        return False, 0, ""
    return True, pid, process_name(pid)


def process_name(pid):
    """The command name apt's own message shows ("It is held by process N (NAME)")."""
    if pid < 0:
        return "an open file description lock"
    if pid == 0:
        return "a process outside this PID namespace"
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return "?"


def held(locks):
    out = []
    for path in locks:
        busy, pid, name = lock_holder(path)
        if busy:
            out.append({"path": path, "pid": pid, "holder": name})
    return out


def parse_status(text):
    """The value of cloud-init status's "status: X" line (after --wait's dots)."""
    status = ""
    for line in text.splitlines():
        line = line.strip(". \t")
        if line.startswith("status:"):
            status = line[len("status:"):].strip()
    return status


def cloud_init(wait, timeout):
    """cloud-init status [--wait], bounded by timeout seconds."""
    exe = shutil.which("cloud-init")
    info = {"present": bool(exe), "status": "", "rc": None, "timed_out": False, "waited": 0}
    if not exe:
        return info
    start = time.monotonic()
    try:
        p = subprocess.run([exe, "status"] + (["--wait"] if wait else []), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=max(timeout, 1))
        info["status"], info["rc"] = parse_status(p.stdout), p.returncode
        if not info["status"]:
            info["status"] = "unknown: " + p.stdout.strip()[-200:]
    except subprocess.TimeoutExpired:
        info["status"], info["timed_out"] = "running", True
    info["waited"] = int(round(time.monotonic() - start))
    return info


def main(argv):
    mode, timeout, delay, locks = argv[0], int(argv[1]), float(argv[2]), argv[3:]
    start = time.monotonic()
    deadline = start + timeout
    out = {"cloud_init": cloud_init(False, min(timeout, 30)), "locks": held(locks)}
    if mode == "wait":
        out["timed_out"] = ""
        if out["cloud_init"]["status"] == "running":
            out["cloud_init"] = cloud_init(True, deadline - time.monotonic())
            if out["cloud_init"]["timed_out"]:
                out["timed_out"] = "cloud-init"
        out["locks"] = held(locks)
        out["waited_for"] = out["locks"]
        while out["locks"] and not out["timed_out"]:
            if time.monotonic() >= deadline:
                out["timed_out"] = "locks"
                break
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.1)))
            out["locks"] = held(locks)
        out["waited"] = int(round(time.monotonic() - start))
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
