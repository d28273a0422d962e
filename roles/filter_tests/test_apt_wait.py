"""roles/apt_wait: files/wait.py against real fcntl locks held by another
process (named as apt names its processes), and the filter plugin's
judgement and messages."""

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
import unittest

from helpers import load

wait = load("apt_wait", "files/wait.py")
aw = load("apt_wait", "filter_plugins/apt_wait.py")

# A process named NAME that holds an fcntl write lock on PATH (as apt-get
# holds /var/lib/dpkg/lock-frontend) for SECONDS, then exits.
HOLDER = r"""
import ctypes, fcntl, os, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME
fd = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
"""


@contextlib.contextmanager
def holder(name, path, seconds):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, name, path, str(seconds)], stdout=subprocess.PIPE,
                         universal_newlines=True)
    try:
        assert p.stdout.readline().strip() == "locked"
        yield p.pid
    finally:
        p.kill()
        p.wait()
        p.stdout.close()


def run_main(*args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert wait.main([str(a) for a in args]) == 0
    return json.loads(buf.getvalue())


class Locks(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.lock = os.path.join(self.dir.name, "lock-frontend")
        open(self.lock, "w").close()
        # no cloud-init on the PATH the script sees
        self.path = os.environ["PATH"]
        os.environ["PATH"] = self.dir.name

    def tearDown(self):
        os.environ["PATH"] = self.path
        self.dir.cleanup()

    def test_holder_found_without_taking_the_lock(self):
        self.assertEqual(wait.lock_holder(self.lock), (False, 0, ""))
        self.assertEqual(wait.lock_holder(os.path.join(self.dir.name, "none")), (False, 0, ""))
        with holder("apt-get", self.lock, 30) as pid:
            self.assertEqual(wait.lock_holder(self.lock), (True, pid, "apt-get"))
            # still held by it: the probe took nothing
            self.assertEqual(wait.lock_holder(self.lock), (True, pid, "apt-get"))

    def test_probe(self):
        with holder("unattended-upgr", self.lock, 30) as pid:
            got = run_main("probe", 600, 1, self.lock)
        self.assertEqual(got["cloud_init"]["present"], False)
        self.assertEqual(got["locks"], [{"path": self.lock, "pid": pid, "holder": "unattended-upgr"}])
        self.assertNotIn("waited", got)

    def test_wait_until_released(self):
        with holder("apt-get", self.lock, 3) as pid:
            start = time.monotonic()
            got = run_main("wait", 60, 0.2, self.lock)
            took = time.monotonic() - start
        self.assertEqual(got["timed_out"], "")
        self.assertEqual(got["locks"], [])
        self.assertEqual(got["waited_for"], [{"path": self.lock, "pid": pid, "holder": "apt-get"}])
        self.assertGreaterEqual(took, 2)
        self.assertLess(took, 20)

    def test_wait_times_out(self):
        with holder("apt-get", self.lock, 60) as pid:
            start = time.monotonic()
            got = run_main("wait", 2, 0.5, self.lock)
            took = time.monotonic() - start
        self.assertEqual(got["timed_out"], "locks")
        self.assertEqual(got["locks"], [{"path": self.lock, "pid": pid, "holder": "apt-get"}])
        self.assertGreaterEqual(took, 1.9)
        self.assertLess(took, 5)


class CloudInit(unittest.TestCase):
    """A cloud-init on PATH that answers as the real one (tabular output,
    --wait prints a dot every 0.25 s while it runs, then a blank line)."""

    FAKE = """#!/bin/sh
wait=
[ "${2:-}" = --wait ] && wait=1
while [ -n "$wait" ] && [ ! -e "$DONE" ]; do printf .; sleep 0.25; done
[ -n "$wait" ] && echo
if [ -e "$DONE" ]; then echo "status: done"; else echo "status: running"; fi
"""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        exe = os.path.join(self.dir.name, "cloud-init")
        with open(exe, "w") as f:
            f.write(self.FAKE)
        os.chmod(exe, stat.S_IRWXU)
        self.env = {k: os.environ.get(k) for k in ("PATH", "DONE")}
        os.environ["PATH"] = self.dir.name + ":/usr/bin:/bin"
        os.environ["DONE"] = os.path.join(self.dir.name, "done")

    def tearDown(self):
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self.dir.cleanup()

    def test_parse_status(self):
        for text, want in [("status: done\n", "done"), ("......\nstatus: done\n", "done"),
                           ("\nstatus: running\n", "running"), ("status: not run\n", "not run"),
                           ("status: error\n", "error"), ("garbage", "")]:
            self.assertEqual(wait.parse_status(text), want, text)

    def test_running_then_done(self):
        got = run_main("probe", 60, 1, os.path.join(self.dir.name, "nolock"))
        self.assertEqual(got["cloud_init"]["status"], "running")
        toucher = subprocess.Popen(["sh", "-c", "sleep 2; touch \"$DONE\""])
        got = run_main("wait", 60, 1, os.path.join(self.dir.name, "nolock"))
        toucher.wait()
        self.assertEqual((got["timed_out"], got["cloud_init"]["status"]), ("", "done"))
        self.assertGreaterEqual(got["cloud_init"]["waited"], 1)

    def test_running_for_good(self):
        start = time.monotonic()
        got = run_main("wait", 2, 1, os.path.join(self.dir.name, "nolock"))
        self.assertLess(time.monotonic() - start, 6)
        self.assertEqual(got["timed_out"], "cloud-init")


class Report(unittest.TestCase):
    LOCK = {"path": "/var/lib/dpkg/lock-frontend", "pid": 1234, "holder": "apt-get"}

    def res(self, doc, rc=0):
        return {"rc": rc, "stdout": json.dumps(doc), "stderr": ""}

    def test_probe_idle(self):
        got = aw.apt_wait_report(self.res({"cloud_init": {"present": True, "status": "done"}, "locks": []}), "worker-1", 600)
        self.assertEqual((got["busy"], got["failed"]), (False, False))

    def test_probe_busy(self):
        got = aw.apt_wait_report(self.res({"cloud_init": {"present": False}, "locks": [self.LOCK]}), "worker-1", 600)
        self.assertEqual((got["busy"], got["failed"]), (True, False))
        self.assertEqual(got["msg"], "worker-1: waiting for the dpkg lock /var/lib/dpkg/lock-frontend "
                                     "(held by pid 1234, apt-get), at most 600 s")
        got = aw.apt_wait_report(self.res({"cloud_init": {"present": True, "status": "running"}, "locks": [self.LOCK]}),
                                 "worker-1", 600, True)
        self.assertEqual(got["msg"], "worker-1: would wait for cloud-init to finish (cloud-init status: running), "
                                     "then the dpkg lock /var/lib/dpkg/lock-frontend (held by pid 1234, apt-get), at most 600 s")

    def test_not_started_is_not_waited_for(self):
        got = aw.apt_wait_report(self.res({"cloud_init": {"present": True, "status": "not started"}, "locks": []}), "w", 600)
        self.assertFalse(got["busy"])

    def test_waited(self):
        doc = {"cloud_init": {"present": True, "status": "done", "waited": 0}, "locks": [], "waited_for": [self.LOCK],
               "waited": 118, "timed_out": ""}
        got = aw.apt_wait_report(self.res(doc), "worker-1", 600)
        self.assertEqual((got["failed"], got["msg"]), (False, "worker-1: waited 118 s for the dpkg lock "
                                                               "/var/lib/dpkg/lock-frontend (pid 1234, apt-get); apt can run"))

    def test_timed_out(self):
        doc = {"cloud_init": {"present": False}, "locks": [dict(self.LOCK, holder="unattended-upgr")],
               "waited_for": [self.LOCK], "waited": 600, "timed_out": "locks"}
        got = aw.apt_wait_report(self.res(doc), "worker-1", 600)
        self.assertTrue(got["failed"])
        self.assertEqual(got["msg"], "worker-1: the dpkg lock /var/lib/dpkg/lock-frontend (held by pid 1234, "
                                     "unattended-upgr) still held after 600 s. Nothing was installed. See what it "
                                     "does (ps -fp 1234; unattended-upgrades can take a while), then re-run.")
        doc = {"cloud_init": {"present": True, "status": "running", "timed_out": True}, "locks": [],
               "waited": 600, "timed_out": "cloud-init"}
        got = aw.apt_wait_report(self.res(doc), "worker-1", 600)
        self.assertTrue(got["failed"])
        self.assertTrue(got["msg"].startswith("worker-1: cloud-init was still running after 600 s"))

    def test_no_report(self):
        got = aw.apt_wait_report({"rc": 127, "stdout": "", "stderr": "sh: 1: python3: not found"}, "worker-1", 600)
        self.assertTrue(got["failed"])
        self.assertEqual(got["msg"], "worker-1: could not tell whether cloud-init or apt is busy "
                                     "(exit 127: sh: 1: python3: not found). Nothing was installed.")


if __name__ == "__main__":
    unittest.main()
