"""roles/pv_register: which PVs heal-start unregisters and what blocks it,
and files/pv.sh's output read by key (plugins/filter/pv_register.py); the
script itself run for real against a fake kubectl."""

import base64
import json
import os
import subprocess
import tempfile
import unittest

from helpers import ROLES

from ansible_collections.heatsible.nfv.plugins.filter import pv_register as pr
SCRIPT = os.path.join(ROLES, "pv_register", "files", "pv.sh")
LABEL = "app.kubernetes.io/managed-by=heatsible"


def pv(name, phase, server=None, labelled=False, claim="", csi=False):
    meta = {"name": name}
    if labelled:
        meta["labels"] = {"app.kubernetes.io/managed-by": "heatsible"}
    spec = {"capacity": {"storage": "1Gi"}}
    if server:
        spec["nfs"] = {"server": server, "path": "/volume/nfs/" + name}
    if csi:
        spec["csi"] = {"driver": "nfs.manila.csi.openstack.org", "volumeHandle": "0fa1a6ae"}
    if claim:
        ns, n = claim.split("/")
        spec["claimRef"] = {"namespace": ns, "name": n}
    out = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase:
        out["status"] = {"phase": phase}
    return out


def listing(*pvs):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(pvs)})


class Targets(unittest.TestCase):
    def test_only_this_servers_nfs_pvs_of_heatsible(self):
        pvs = listing(
            pv("nfs-pv1", "Available", "10.10.0.45", labelled=True),
            pv("nfs-pv2", "Bound", "10.10.0.45", claim="default/data"),  # named
            pv("not-ours", "Bound", "10.10.0.45", claim="default/theirs"),  # neither
            pv("other-server", "Bound", "10.20.0.9", labelled=True, claim="default/o"),
            pv("manila", "Bound", labelled=True, csi=True, claim="default/share"),
            pv("no-status", None, "10.10.0.45", labelled=True))
        got = pr.pv_register_targets(pvs, ["nfs-pv2", "manila"], ["10.10.0.45"], LABEL)
        self.assertEqual(got, [
            {"name": "nfs-pv1", "phase": "Available", "claim": ""},
            {"name": "nfs-pv2", "phase": "Bound", "claim": "default/data"},
            {"name": "no-status", "phase": "Unknown", "claim": ""},
        ])

    def test_no_servers_means_any_nfs_server(self):
        pvs = {"items": [pv("a", "Available", "10.20.0.9", labelled=True), pv("m", "Bound", labelled=True, csi=True)]}
        self.assertEqual([t["name"] for t in pr.pv_register_targets(pvs, [], [], LABEL)], ["a"])

    def test_other_label_value_is_not_heatsibles(self):
        p = pv("a", "Available", "10.10.0.45")
        p["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "someone-else"}
        self.assertEqual(pr.pv_register_targets(listing(p), [], [], LABEL), [])

    def test_empty_cluster(self):
        self.assertEqual(pr.pv_register_targets(listing(), ["a"], [], LABEL), [])


class Guard(unittest.TestCase):
    T = [{"name": "a", "phase": "Bound", "claim": "ns/c"},
         {"name": "b", "phase": "Released", "claim": "x/y"},
         {"name": "c", "phase": "Available", "claim": ""}]

    def test_bound_and_released_block(self):
        got = pr.pv_register_guard(self.T, False)
        self.assertEqual([t["name"] for t in got["blocking"]], ["a", "b"])
        self.assertEqual(got["msg"],
                         "refusing to unregister the PersistentVolumes, nothing was deleted: "
                         "a is Bound to claim ns/c; b is Released from claim x/y. "
                         "Delete the Bound claims (stop their workloads) first. "
                         "A Released PV still holds its former claim's data (it stays on the export either way): "
                         "decide whether a new claim may get it, then re-run with --delete-released, "
                         "or delete the PV yourself.")

    def test_delete_released_leaves_bound_only(self):
        for flag in (True, "true", "yes"):
            with self.subTest(flag=flag):
                got = pr.pv_register_guard(self.T, flag)
                self.assertEqual(got["msg"],
                                 "refusing to unregister the PersistentVolumes, nothing was deleted: "
                                 "a is Bound to claim ns/c. Delete the Bound claims (stop their workloads) first.")

    def test_released_only(self):
        got = pr.pv_register_guard(self.T[1:], "false")
        self.assertTrue(got["msg"].startswith(
            "refusing to unregister the PersistentVolumes, nothing was deleted: b is Released from claim x/y. A Released PV"))
        self.assertNotIn("Delete the Bound", got["msg"])

    def test_nothing_blocks(self):
        self.assertEqual(pr.pv_register_guard(self.T[2:], False), {"blocking": [], "msg": ""})
        self.assertEqual(pr.pv_register_guard(self.T[1:], True), {"blocking": [], "msg": ""})


class Report(unittest.TestCase):
    def test_keys_not_positions(self):
        out = "\n".join([
            "a stray line from a login script",
            "apply persistentvolume/nfs-pv1 created",
            "apply persistentvolume/nfs-pv2 unchanged",
            "",
            "phase nfs-pv1 Available",
            "phase nfs-pv2 Bound",
        ])
        got = pr.pv_register_report({"rc": 0, "stdout": out}, ["nfs-pv1", "nfs-pv2"])
        self.assertEqual(got["applied"], ["persistentvolume/nfs-pv1 created", "persistentvolume/nfs-pv2 unchanged"])
        self.assertEqual(got["phases"], [["nfs-pv1", "Available"], ["nfs-pv2", "Bound"]])
        self.assertTrue(got["changed"])
        self.assertTrue(got["ready"])
        self.assertEqual(got["server"], "")

    def test_unchanged_is_not_a_change(self):
        got = pr.pv_register_report("apply persistentvolume/a unchanged\napply persistentvolume/b configured (server dry run)\n", ["a", "b"])
        self.assertTrue(got["changed"])
        got = pr.pv_register_report("apply persistentvolume/a unchanged\n", ["a"])
        self.assertFalse(got["changed"])

    def test_not_ready_and_missing(self):
        got = pr.pv_register_report("phase a Pending\nphase c Failed\n", ["a", "b", "c"])
        self.assertFalse(got["ready"])
        self.assertEqual(got["missing"], ["b"])
        self.assertEqual(got["not_ready"], ["a Pending", "c Failed"])

    def test_server(self):
        got = pr.pv_register_report({"rc": 10, "stdout": "server https://10.10.0.10:6443\n"})
        self.assertEqual(got["server"], "https://10.10.0.10:6443")
        self.assertEqual(pr.pv_register_report({"rc": 10, "stdout": "server \n"})["server"], "")
        self.assertEqual(pr.pv_register_report({"msg": "unreachable"})["server"], "")


class Poll(unittest.TestCase):
    def test_list(self):
        got = pr.pv_register_poll({"rc": 0, "stdout": listing(pv("a", "Bound"), pv("b", "Available"))}, ["a", "b"])
        self.assertEqual(got["phases"], [["a", "Bound"], ["b", "Available"]])
        self.assertTrue(got["ready"] and got["settled"])

    def test_one_name_is_one_object(self):
        got = pr.pv_register_poll({"rc": 0, "stdout": json.dumps(pv("a", "Available"))}, ["a"])
        self.assertTrue(got["ready"])

    def test_pending_keeps_polling_failed_stops(self):
        got = pr.pv_register_poll({"rc": 0, "stdout": listing(pv("a", "Pending"))}, ["a"])
        self.assertFalse(got["settled"])
        got = pr.pv_register_poll({"rc": 0, "stdout": listing(pv("a", "Failed"))}, ["a"])
        self.assertTrue(got["settled"])
        self.assertFalse(got["ready"])
        self.assertEqual(got["not_ready"], ["a Failed"])

    def test_kubectl_failed(self):
        for r in ({"rc": 1, "stdout": listing(pv("a", "Available"))}, {"rc": 1, "stdout": ""}, {"rc": 0, "stdout": "not json"}):
            with self.subTest(r=r):
                got = pr.pv_register_poll(r, ["a", "b"])
                self.assertFalse(got["ready"])
                self.assertFalse(got["settled"])


class Stream(unittest.TestCase):
    def test_documents(self):
        self.assertEqual(pr.pv_register_stream(["a: 1", "b: '{{ 7*7 }}'"]), "---\na: 1\n---\nb: '{{ 7*7 }}'\n")
        self.assertEqual(pr.pv_register_stream([]), "")


# A kubectl that answers what pv.sh asks: /readyz (fails while $DOWN
# exists), config view, apply (reads stdin into $APPLIED), get (phases
# from $PHASES, one "NAME PHASE" line each).
FAKE = r"""#!/bin/sh
case "$*" in
*"get --raw /readyz"*) [ ! -e "$DIR/down" ] || { echo "The connection to the server was refused" >&2; exit 1; } ;;
*"config view"*) printf 'https://10.10.0.10:6443' ;;
*"apply -f -"*) cat > "$DIR/applied"; echo "persistentvolume/nfs-pv1 created"; [ ! -e "$DIR/badapply" ] || { echo "error: bad" >&2; exit 1; } ;;
*"get persistentvolumes"*) cat "$DIR/phases" ;;
*) echo "unexpected: $*" >&2; exit 3 ;;
esac
"""


class Script(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.kubectl = os.path.join(self.dir, "kubectl")
        with open(self.kubectl, "w") as f:
            f.write(FAKE)
        os.chmod(self.kubectl, 0o755)

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir], check=True)

    def run_pv(self, *args):
        return subprocess.run(["sh", SCRIPT] + list(args), capture_output=True, text=True, env={"DIR": self.dir, "PATH": os.environ["PATH"]}, timeout=60)

    def test_apply_and_phases(self):
        with open(os.path.join(self.dir, "phases"), "w") as f:
            f.write("nfs-pv1   Available\n")
        payload = base64.b64encode(b"---\nkind: PersistentVolume\n").decode()
        p = self.run_pv("apply", "5", "1", "5", "5", "1", "", payload, "nfs-pv1", "--", self.kubectl)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = pr.pv_register_report({"rc": p.returncode, "stdout": p.stdout}, ["nfs-pv1"])
        self.assertTrue(got["ready"] and got["changed"], p.stdout)
        with open(os.path.join(self.dir, "applied")) as f:
            self.assertEqual(f.read(), "---\nkind: PersistentVolume\n")

    def test_api_down(self):
        open(os.path.join(self.dir, "down"), "w").close()
        for args in (["wait", "1", "1", "1", "--", self.kubectl],
                     ["apply", "1", "1", "1", "5", "1", "", "", "a", "--", self.kubectl]):
            with self.subTest(args[0]):
                p = self.run_pv(*args)
                self.assertEqual(p.returncode, 10)
                self.assertEqual(pr.pv_register_report({"rc": 10, "stdout": p.stdout})["server"], "https://10.10.0.10:6443")
                self.assertEqual(p.stderr.strip(), "The connection to the server was refused")
                self.assertFalse(os.path.exists(os.path.join(self.dir, "applied")))

    def test_apply_fails(self):
        open(os.path.join(self.dir, "badapply"), "w").close()
        p = self.run_pv("apply", "5", "1", "5", "5", "1", "", "", "a", "--", self.kubectl)
        self.assertEqual(p.returncode, 11)
        self.assertEqual(p.stderr.strip(), "error: bad")

    def test_wait_gives_up_with_the_phases(self):
        with open(os.path.join(self.dir, "phases"), "w") as f:
            f.write("a Pending\n")
        p = self.run_pv("apply", "5", "1", "5", "1", "1", "", "", "a", "--", self.kubectl)
        self.assertEqual(p.returncode, 0)
        got = pr.pv_register_report(p.stdout, ["a"])
        self.assertEqual(got["not_ready"], ["a Pending"])

    def test_dry_run_does_not_wait(self):
        p = self.run_pv("apply", "5", "1", "5", "5", "1", "yes", "", "a", "--", self.kubectl)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(pr.pv_register_report(p.stdout, ["a"])["phases"], [])


if __name__ == "__main__":
    unittest.main()
