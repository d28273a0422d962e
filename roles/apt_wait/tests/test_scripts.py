"""roles/apt_wait: files/wait.py against real fcntl locks held by another
process (named as apt names its processes), and files/update.py (the
filters that judge their output are the collection's: test_apt_wait.py
in collection/tests/unit/plugins/filter)."""

import contextlib
import importlib.util
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def load(rel):
    path = os.path.join(HERE, "..", rel)
    spec = importlib.util.spec_from_file_location("apt_wait_" + os.path.splitext(os.path.basename(rel))[0], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


wait = load("files/wait.py")
update = load("files/update.py")


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
