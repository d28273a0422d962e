"""heatsible.nfv's apt_wait filters (plugins/filter/apt_wait.py): the
judgement and messages of the apt_wait role on what its probes found."""

import json
import unittest

from ansible_collections.heatsible.nfv.plugins.filter import apt_wait as aw


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


if __name__ == "__main__":
    unittest.main()
