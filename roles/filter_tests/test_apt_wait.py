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
                                     "does (ps -fp 1234; unattended-upgrades can take a while), then re-run. The wait is "
                                     "bounded by 600 s: re-run with --wait apt=SECONDS for a longer one.")
        doc = {"cloud_init": {"present": True, "status": "running", "timed_out": True}, "locks": [],
               "waited": 600, "timed_out": "cloud-init"}
        got = aw.apt_wait_report(self.res(doc), "worker-1", 600)
        self.assertTrue(got["failed"])
        self.assertTrue(got["msg"].startswith("worker-1: cloud-init was still running after 600 s"))
        self.assertTrue(got["msg"].endswith("bounded by 600 s: re-run with --wait apt=SECONDS for a longer one."))

    def test_other_purpose(self):
        # k8s_join waits before it looks for kubeadm: its own words, its knob.
        doc = {"cloud_init": {"present": True, "status": "running", "timed_out": True}, "locks": [],
               "waited": 300, "timed_out": "cloud-init"}
        got = aw.apt_wait_report(self.res(doc), "worker-1", 300, False, "kubeadm can be looked for",
                                 "Nothing was joined.", "cloud-init")
        self.assertEqual(got["msg"], "worker-1: cloud-init was still running after 300 s (cloud-init status --wait "
                                     "did not return). Nothing was joined. See cloud-init status --long and "
                                     "/var/log/cloud-init-output.log on the host; re-run when it is done. The wait is "
                                     "bounded by 300 s: re-run with --wait cloud-init=SECONDS for a longer one.")
        doc = {"cloud_init": {"present": True, "status": "done", "waited": 31}, "locks": [], "waited_for": [],
               "waited": 31, "timed_out": ""}
        got = aw.apt_wait_report(self.res(doc), "worker-1", 300, False, "kubeadm can be looked for")
        self.assertEqual(got["msg"], "worker-1: waited 31 s for cloud-init (31 s, status: done); kubeadm can be looked for")

    def test_no_report(self):
        got = aw.apt_wait_report({"rc": 127, "stdout": "", "stderr": "sh: 1: python3: not found"}, "worker-1", 600)
        self.assertTrue(got["failed"])
        self.assertEqual(got["msg"], "worker-1: could not tell whether cloud-init or apt is busy "
                                     "(exit 127: sh: 1: python3: not found). Nothing was installed.")


update = load("apt_wait", "files/update.py")

# apt-get -q update (apt 2.6, Debian 12, LC_ALL=C) with a source answering
# 404 (a retired repository: no Release file), recorded on the machine.
RETIRED = """Ign:1 http://10.231.0.1:8404/kubernetes-xenial kubernetes-xenial InRelease
Err:2 http://10.231.0.1:8404/kubernetes-xenial kubernetes-xenial Release
  404  Not Found [IP: 10.231.0.1 8404]
Get:3 http://deb.debian.org/debian bookworm-updates InRelease [55.4 kB]
Get:4 http://deb.debian.org/debian bookworm-updates/main amd64 Packages [6924 B]
Reading package lists...
E: The repository 'http://10.231.0.1:8404/kubernetes-xenial kubernetes-xenial Release' does not have a Release file.
"""
# The same with a source that refuses connections (exit 0: apt-get warns).
REFUSED = """Ign:1 http://10.231.0.1:8405/security bookworm-security InRelease
Hit:2 http://deb.debian.org/debian bookworm-updates InRelease
Ign:1 http://10.231.0.1:8405/security bookworm-security InRelease
Err:1 http://10.231.0.1:8405/security bookworm-security InRelease
  Could not connect to 10.231.0.1:8405 (10.231.0.1). - connect (111: Connection refused)
Reading package lists...
W: Failed to fetch http://10.231.0.1:8405/security/dists/bookworm-security/InRelease  Could not connect to 10.231.0.1:8405 (10.231.0.1). - connect (111: Connection refused)
W: Some index files failed to download. They have been ignored, or old ones used instead.
"""
# Every source refused (exit 0).
NONE = """Ign:1 http://10.231.0.1:8405/security bookworm-security InRelease
Err:1 http://10.231.0.1:8405/security bookworm-security InRelease
  Could not connect to 10.231.0.1:8405 (10.231.0.1). - connect (111: Connection refused)
Reading package lists...
W: Failed to fetch http://10.231.0.1:8405/security/dists/bookworm-security/InRelease  Could not connect to 10.231.0.1:8405 (10.231.0.1). - connect (111: Connection refused)
W: Some index files failed to download. They have been ignored, or old ones used instead.
"""
# A repository whose key expired or is missing (apt 2.x: an error).
UNSIGNED = """Hit:1 http://deb.debian.org/debian bookworm InRelease
Get:2 https://user:secret@repo.example.com/apt stable InRelease [3 kB]
Err:2 https://user:secret@repo.example.com/apt stable InRelease
  The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 234654DA9A296436
Reading package lists...
W: GPG error: https://user:secret@repo.example.com/apt stable InRelease: The following signatures couldn't be verified because the public key is not available: NO_PUBKEY 234654DA9A296436
E: The repository 'https://user:secret@repo.example.com/apt stable InRelease' is not signed.
"""
LOCKED = """E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)
E: Unable to lock directory /var/lib/apt/lists/
"""


def ran(output, rc=0, took=1, timed_out=False, fresh=False, age=7200):
    rep = {"fresh": fresh, "age": age}
    if not fresh:
        rep.update(rc=rc, output=output, took=took, timed_out=timed_out)
    return {"rc": 0, "stdout": json.dumps(rep)}


class AptUpdate(unittest.TestCase):
    def test_retired_repository_is_left_out(self):
        r = aw.apt_update_report(ran(RETIRED, rc=100), "workernode-x", 600)
        self.assertEqual(r["msg"], "workernode-x: apt-get update could not fetch from 1 source(s), left out as apt-get "
                         "leaves them out: http://10.231.0.1:8404/kubernetes-xenial kubernetes-xenial Release "
                         "(404 Not Found [IP: 10.231.0.1 8404]); installing from the sources that answered (1 s)")
        self.assertTrue(r["warn"])
        self.assertFalse(r["failed"])
        self.assertFalse(r["all_failed"])
        self.assertIn("apt-get update could not fetch from 1 source(s): http://10.231.0.1:8404/kubernetes-xenial "
                      "kubernetes-xenial Release (404 Not Found", r["hint"])

    def test_refused_source(self):
        failed, answered = aw.apt_update_parse(REFUSED)
        self.assertEqual(failed, [("http://10.231.0.1:8405/security bookworm-security",
                                   "http://10.231.0.1:8405/security bookworm-security InRelease",
                                   "Could not connect to 10.231.0.1:8405 (10.231.0.1). - connect (111: Connection refused)")])
        self.assertEqual(answered, ["http://deb.debian.org/debian bookworm-updates"])
        r = aw.apt_update_report(ran(REFUSED), "w", 600)
        self.assertTrue(r["warn"])
        self.assertFalse(r["all_failed"])

    def test_every_source_failed(self):
        r = aw.apt_update_report(ran(NONE), "w", 600)
        self.assertTrue(r["warn"])
        self.assertTrue(r["all_failed"])
        self.assertFalse(r["failed"])  # the install says whether the package is there
        self.assertTrue(r["msg"].startswith("w: apt-get update could not fetch from any of its 1 source(s): "
                                            "http://10.231.0.1:8405/security bookworm-security InRelease (Could not connect"))
        self.assertIn("installing from the package lists already on the host", r["msg"])
        self.assertIn("could not fetch from any of its 1 source(s), so no package list was refreshed:", r["hint"])

    def test_unsigned_repository_once_and_masked(self):
        failed, answered = aw.apt_update_parse(aw._CREDS.sub("//********@", UNSIGNED))
        self.assertEqual([f[0] for f in failed], ["https://********@repo.example.com/apt stable"])
        self.assertEqual(answered, ["http://deb.debian.org/debian bookworm"])
        r = aw.apt_update_report(ran(UNSIGNED, rc=100), "w", 600)
        self.assertNotIn("secret", r["msg"] + r["hint"])
        self.assertIn("NO_PUBKEY 234654DA9A296436", r["msg"])

    def test_update_itself_failed(self):
        r = aw.apt_update_report(ran(LOCKED, rc=100), "w", 600)
        self.assertTrue(r["failed"])
        self.assertIn("w: apt-get update failed (exit 100) without naming a source that failed: E: Could not get lock", r["msg"])
        self.assertIn("Nothing was installed.", r["msg"])

    def test_timed_out(self):
        r = aw.apt_update_report(ran("Ign:1 http://a.example x InRelease\n", rc=None, took=600, timed_out=True), "w", 600)
        self.assertTrue(r["warn"])
        self.assertFalse(r["failed"])
        self.assertEqual(r["msg"], "w: apt-get update did not finish within 600 s and was stopped; installing from the "
                                   "package lists there are (600 s)")

    def test_all_answered_and_fresh(self):
        r = aw.apt_update_report(ran("Hit:1 http://deb.debian.org/debian bookworm InRelease\nReading package lists...\n"), "w", 600)
        self.assertFalse(r["warn"] or r["failed"])
        self.assertEqual(r["hint"], "")
        r = aw.apt_update_report(ran("", fresh=True, age=12), "w", 600)
        self.assertFalse(r["ran"] or r["warn"] or r["failed"])

    def test_no_report(self):
        r = aw.apt_update_report({"rc": 1, "stderr": "python3: not found"}, "w", 600)
        self.assertTrue(r["failed"])
        self.assertIn("python3: not found", r["msg"])


class UpdateScript(unittest.TestCase):
    def test_lists_age(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        stamp, lists = os.path.join(d.name, "stamp"), os.path.join(d.name, "lists")
        os.mkdir(lists)
        os.utime(lists, (time.time() - 7200, time.time() - 7200))
        old = update.STAMP, update.LISTS
        self.addCleanup(setattr, update, "STAMP", old[0])
        self.addCleanup(setattr, update, "LISTS", old[1])
        update.STAMP, update.LISTS = stamp, lists
        self.assertAlmostEqual(update.lists_age(), 7200, delta=5)
        open(stamp, "w").close()
        self.assertLess(update.lists_age(), 5)  # the stamp wins
        update.STAMP, update.LISTS = stamp + ".no", lists + ".no"
        self.assertIsNone(update.lists_age())

    def test_run_is_bounded(self):
        start = time.monotonic()
        out = update.run(1, argv=(sys.executable, "-c", "import time; print('Ign:1 http://a x InRelease', flush=True); time.sleep(30)"))
        self.assertLess(time.monotonic() - start, 10)
        self.assertTrue(out["timed_out"])
        self.assertIn("Ign:1", out["output"])

    def test_run_output_and_rc(self):
        out = update.run(10, argv=(sys.executable, "-c", "import sys; print('E: x'); sys.exit(100)"))
        self.assertEqual((out["rc"], out["output"], out["timed_out"]), (100, "E: x\n", False))
        out = update.run(10, argv=("/nonexistent/apt-get",))
        self.assertEqual(out["rc"], 127)


if __name__ == "__main__":
    unittest.main()
