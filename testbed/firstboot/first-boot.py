#!/usr/bin/python3
"""bed first boot (testbed/firstboot, docs/testbed.md): what a fresh cloud VM
does in its first minutes, for the bed's hosts (which have neither
cloud-init nor a network to upgrade from).

  first-boot.py CLOUD_INIT_SECONDS DPKG_LOCK_SECONDS HOLDER [HOOK]

- cloud-init "runs" for CLOUD_INIT_SECONDS: /run/cloud-init/status.json
  without result.json, as cloud-init leaves them while it runs (the
  stand-in /usr/bin/cloud-init reads them, as the real one does); then
  HOOK, when given (an executable: what the user data's last module does,
  e.g. bed first-boot --kubeadm's install of the kubeadm stand-in), then
  result.json: cloud-init is done once HOOK has run;
- this process, renamed HOLDER (apt-get, unattended-upgr: the name apt's
  "It is held by process N (NAME)" shows), holds an fcntl write lock on
  /var/lib/dpkg/lock-frontend for DPKG_LOCK_SECONDS, as apt-get does
  (F_SETLK; apt-get run meanwhile exits 100: "Could not get lock").

Runs as the unit bed-first-boot.service (Type=notify: ready once the lock
is held, before sshd starts). SIGTERM ends both at once.
"""

import ctypes
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time

RUN = "/run/cloud-init"
LOCK = "/var/lib/dpkg/lock-frontend"


def write(name, doc):
    tmp = os.path.join(RUN, "." + name)
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(RUN, name))


def notify(msg):
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(msg.encode(), addr)


def main():
    ci_s, lock_s, holder = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    hook = sys.argv[4] if len(sys.argv) > 4 else ""
    ctypes.CDLL(None).prctl(15, holder.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    start = time.time()
    os.makedirs(RUN, exist_ok=True)
    ci_done = ci_s <= 0
    if not ci_done:
        for f in ("result.json",):
            if os.path.exists(os.path.join(RUN, f)):
                os.remove(os.path.join(RUN, f))
        write("status.json", {"v1": {"datasource": None, "stage": "modules-final",
                                     "init": {"start": start, "finished": start + 1, "errors": []},
                                     "modules-final": {"start": start + 1, "finished": None, "errors": []}}})
    fd = None
    if lock_s > 0:
        fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o640)
        fcntl.lockf(fd, fcntl.LOCK_EX)  # waits if apt holds it now
    notify("READY=1\nSTATUS=cloud-init %ss, %s on %s %ss" % (ci_s, holder, LOCK, lock_s))
    while not ci_done or fd is not None:
        now = time.time()
        if not ci_done and (stop or now - start >= ci_s):
            if hook and not stop:
                subprocess.run([hook], check=False)
            ds = "DataSourceNoCloud [seed=/var/lib/cloud/seed/nocloud]"
            write("result.json", {"v1": {"datasource": ds, "errors": []}})
            write("status.json", {"v1": {"datasource": ds, "stage": None,
                                         "modules-final": {"start": start + 1, "finished": now, "errors": []}}})
            ci_done = True
        if fd is not None and (stop or now - start >= lock_s):
            os.close(fd)  # releases the lock
            fd = None
        time.sleep(0.2)
    notify("STATUS=done")


if __name__ == "__main__":
    main()
