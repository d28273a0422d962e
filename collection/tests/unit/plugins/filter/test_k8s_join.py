"""roles/k8s_join: the decision before a kubeadm join or a heal-start
(filter plugin), the parsing of kubeadm's join command, the JoinConfiguration
it writes, and the probe (files/probe.sh, run for real with stand-in
binaries on PATH)."""

import json
import os
import subprocess
import tempfile
import unittest

from helpers import ROLES

from ansible_collections.heatsible.nfv.plugins.filter import k8s_join as kj

TOKEN = "abcdef.0123456789abcdef"
HASH = "sha256:" + "1" * 64


CONTAINERD = "unix:///var/run/containerd/containerd.sock"
DOCKERD = "unix:///var/run/cri-dockerd.sock"


def probe(kubeadm=True, kubelet=True, version="v1.33.13", joined=False, sockets=(CONTAINERD,), endpoint=""):
    return {"rc": 0, "stderr": "", "stdout": json.dumps({
        "hostname": "h", "kubeadm": "/usr/bin/kubeadm" if kubeadm else "",
        "kubeadm_version": version if kubeadm else "", "kubelet": "/usr/bin/kubelet" if kubelet else "",
        "kubelet_version": "Kubernetes v1.33.13" if kubelet else "", "kubelet_conf": joined,
        "cri_sockets": list(sockets), "runtime_endpoint": endpoint})}


UNREACHABLE = {"unreachable": True, "msg": "Failed to connect to the host via ssh: Connection refused"}


def nodes(*spec):
    """(name, internal ip or "") -> kubectl get nodes -o json."""
    items = []
    for name, ip in spec:
        st = {"addresses": [{"type": "InternalIP", "address": ip}]} if ip else {}
        items.append({"metadata": {"name": name}, "status": st})
    return json.dumps({"items": items})


ADDR = {"worker-0": "10.0.0.20", "worker-1": "10.0.0.21", "worker-2": "10.0.0.22"}


class Check(unittest.TestCase):
    """heal-start: may the node be removed, i.e. can heal-end join its
    replacement?"""

    def decide(self, probes, peers=("worker-1", "worker-2")):
        return kj.k8s_join_decide("check", probes, "master-0", ["worker-0"], ADDR, list(peers))

    def test_cases(self):
        cases = [
            ("node and master have them", {"master-0": probe(), "worker-0": probe()}, "",
             "worker-0 has kubeadm v1.33.13 and a kubelet"),
            ("accepted, saying what it assumes", {"master-0": probe(), "worker-0": probe()}, "",
             "heal-end can join its replacement, if it has them too (heatsible assumes that Heat builds the "
             "replacement from the same image and user data"),
            ("no kubeadm on the node", {"master-0": probe(), "worker-0": probe(kubeadm=False)},
             "worker-0 has no kubeadm: its replacement, booted from the same image, would have none either "
             "(heatsible assumes that Heat builds the replacement from the same image and user data, and cannot "
             "tell kubeadm and a kubelet that came with them from ones installed by hand after boot", ""),
            ("no kubelet on the node", {"master-0": probe(), "worker-0": probe(kubelet=False)},
             "worker-0 has no kubelet: its replacement", ""),
            ("neither on the node", {"master-0": probe(), "worker-0": probe(kubeadm=False, kubelet=False)},
             "worker-0 has neither kubeadm nor a kubelet: its replacement", ""),
            ("no kubeadm on the master", {"master-0": probe(kubeadm=False), "worker-0": probe()},
             "the first master master-0 has no kubeadm", ""),
            ("dead node, peers have them", {"master-0": probe(), "worker-0": UNREACHABLE, "worker-1": probe(),
                                            "worker-2": UNREACHABLE}, "",
             "worker-0 does not answer; the other workers (same image as its replacement) have kubeadm and a kubelet: worker-1"),
            ("dead node, a peer lacks kubeadm", {"master-0": probe(), "worker-0": UNREACHABLE,
                                                 "worker-1": probe(), "worker-2": probe(kubeadm=False)},
             "worker-0 does not answer, and the other workers, booted from the same image as its replacement, "
             "lack what a join needs: worker-2 has no kubeadm", ""),
            ("dead node, no peer answers", {"master-0": probe(), "worker-0": UNREACHABLE, "worker-1": UNREACHABLE,
                                            "worker-2": UNREACHABLE},
             "worker-0 does not answer and no other worker answers", ""),
            ("node outside --limit", {"master-0": probe()}, "worker-0 is outside --limit and no other worker answers", ""),
        ]
        for name, probes, refuse, msg in cases:
            with self.subTest(name):
                got = self.decide(probes)
                if refuse:
                    self.assertIn(refuse, got["refuse"])
                    self.assertIn("Nothing was changed", got["refuse"])
                else:
                    self.assertEqual(got["refuse"], "")
                    self.assertIn(msg, got["msg"])
                self.assertEqual(got["join"], [])

    def test_no_peers(self):
        got = self.decide({"master-0": probe(), "worker-0": UNREACHABLE}, peers=())
        self.assertIn("no other worker answers", got["refuse"])


class Join(unittest.TestCase):
    """heal-end / scale-end: which nodes join, or why none may."""

    def decide(self, probes, cluster, names=("worker-2",)):
        return kj.k8s_join_decide("join", probes, "master-0", list(names), ADDR, [], cluster)

    def test_cases(self):
        cases = [
            ("fresh VM joins", {"master-0": probe(), "worker-2": probe()}, nodes(("master-0", "10.0.0.12")),
             ["worker-2"], {}, ""),
            ("re-run: joined and its Node is there (under another name)",
             {"master-0": probe(), "worker-2": probe(joined=True)}, nodes(("worker22", "10.0.0.22")),
             [], {"worker-2": "worker22"}, ""),
            ("the old VM's Node is still there", {"master-0": probe(), "worker-2": probe()},
             nodes(("worker22", "10.0.0.22")), [], {},
             "Node worker22 has worker-2's name or address 10.0.0.22, but worker-2 has not joined"),
            ("joined elsewhere", {"master-0": probe(), "worker-2": probe(joined=True)}, nodes(),
             [], {}, "worker-2 has joined a cluster (/etc/kubernetes/kubelet.conf exists) but no Node here"),
            ("two Nodes for one host", {"master-0": probe(), "worker-2": probe(joined=True)},
             nodes(("worker-2", ""), ("worker22", "10.0.0.22")), [], {}, "matches Node objects worker-2 and worker22"),
            ("no kubeadm on the VM", {"master-0": probe(), "worker-2": probe(kubeadm=False)}, nodes(), [], {},
             "worker-2 has no kubeadm"),
            ("kubeadm too old", {"master-0": probe(), "worker-2": probe(version="v1.14.10")}, nodes(), [], {},
             "worker-2 has kubeadm v1.14.10, which heatsible cannot give a JoinConfiguration"),
            ("no kubeadm on the master", {"master-0": probe(kubeadm=False), "worker-2": probe()}, nodes(), [], {},
             "the first master master-0 has no kubeadm"),
        ]
        for name, probes, cluster, join, joined, refuse in cases:
            with self.subTest(name):
                got = self.decide(probes, cluster)
                if refuse:
                    self.assertIn(refuse, got["refuse"])
                    self.assertIn("Nothing was changed", got["refuse"])
                else:
                    self.assertEqual(got["refuse"], "")
                self.assertEqual(got["join"], join)
                self.assertEqual(got["joined"], joined)

    def test_every_reason_is_named(self):
        got = self.decide({"master-0": probe(), "worker-2": probe(kubeadm=False, kubelet=False)},
                          nodes(("worker22", "10.0.0.22")))
        self.assertIn("Node worker22 has worker-2's name or address 10.0.0.22", got["refuse"])
        self.assertIn("worker-2 has neither kubeadm nor a kubelet", got["refuse"])

    def test_booting_in_check_mode(self):
        # check mode, cloud-init still running: what the node lacks now is
        # not the verdict (a real run waits, then looks again)
        probes = {"master-0": probe(), "worker-1": probe(), "worker-2": probe(kubeadm=False, kubelet=False)}
        got = kj.k8s_join_decide("join", probes, "master-0", ["worker-1", "worker-2"], ADDR, [], nodes(),
                                 ["worker-2"])
        self.assertEqual(got["refuse"], "")
        self.assertEqual(got["join"], ["worker-1"])
        self.assertIn("still booting: worker-2 (has neither kubeadm nor a kubelet now); a real run waits for "
                      "their cloud-init and dpkg lock", got["msg"])
        # booting, but also the old VM's Node: still refused
        got = kj.k8s_join_decide("join", probes, "master-0", ["worker-2"], ADDR, [], nodes(("worker22", "10.0.0.22")),
                                 ["worker-2"])
        self.assertIn("Node worker22 has worker-2's name or address", got["refuse"])
        # not booting (or a real run, after the wait): refused as before
        got = kj.k8s_join_decide("join", probes, "master-0", ["worker-2"], ADDR, [], nodes(), [])
        self.assertIn("worker-2 has neither kubeadm nor a kubelet", got["refuse"])

    def test_one_problem_stops_all(self):
        got = self.decide({"master-0": probe(), "worker-1": probe(), "worker-2": probe(kubelet=False)},
                          nodes(), names=("worker-1", "worker-2"))
        self.assertEqual(got["join"], [])
        self.assertIn("worker-2 has no kubelet", got["refuse"])
        self.assertNotIn("worker-1", got["refuse"])

    def test_api_versions(self):
        for version, want in [("v1.33.13", "kubeadm.k8s.io/v1beta4"), ("v1.31.0", "kubeadm.k8s.io/v1beta4"),
                              ("v1.30.4", "kubeadm.k8s.io/v1beta3"), ("v1.22.0", "kubeadm.k8s.io/v1beta3"),
                              ("v1.21.14", "kubeadm.k8s.io/v1beta2"), ("v1.15.0", "kubeadm.k8s.io/v1beta2"),
                              ("v1.14.3", ""), ("", ""), ("2.0.0", "")]:
            with self.subTest(version):
                self.assertEqual(kj.api_version(version), want)
        got = self.decide({"master-0": probe(), "worker-2": probe(version="v1.26.3")}, nodes())
        self.assertEqual(got["api_versions"], {"worker-2": "kubeadm.k8s.io/v1beta3"})


class CRISockets(unittest.TestCase):
    """kubeadm 1.24+ on a node with several CRI endpoints ("found multiple
    CRI endpoints on the host"): criSocket from the first master's kubelet,
    or a refusal before anything changes."""

    def test_join(self):
        two = (CONTAINERD, DOCKERD)
        cases = [
            ("one endpoint: kubeadm's own detection", probe(), probe(), {}, ""),
            ("none (the bed): kubeadm's default", probe(endpoint=""), probe(sockets=()), {}, ""),
            ("two, the master's kubelet names one of them (/run spelling)",
             probe(endpoint="unix:///run/containerd/containerd.sock"), probe(sockets=two), {"worker-2": CONTAINERD}, ""),
            ("two, the master's kubelet names none", probe(), probe(sockets=two), {},
             "worker-2 has several CRI endpoints (%s, %s), among which kubeadm 1.24+ does not choose" % two),
            ("two, the master's kubelet names another", probe(endpoint="unix:///var/run/crio/crio.sock"),
             probe(sockets=two), {}, "kubelet names unix:///var/run/crio/crio.sock, which is not among them"),
        ]
        for name, master, node, want, refuse in cases:
            with self.subTest(name):
                got = kj.k8s_join_decide("join", {"master-0": master, "worker-2": node}, "master-0", ["worker-2"],
                                         ADDR, [], nodes())
                self.assertEqual(got["cri_sockets"], want)
                if refuse:
                    self.assertIn(refuse, got["refuse"])
                    self.assertIn("Nothing was changed. Leave the node one CRI endpoint, the cluster's", got["refuse"])
                    self.assertNotIn("boot the nodes from an image that has kubeadm", got["refuse"])
                    self.assertEqual(got["join"], [])
                else:
                    self.assertEqual(got["refuse"], "")
                    self.assertEqual(got["join"], ["worker-2"])
                    if want:
                        self.assertIn("criSocket " + CONTAINERD, got["msg"])

    def test_heal_start_refuses_first(self):
        got = kj.k8s_join_decide("check", {"master-0": probe(), "worker-0": probe(sockets=(CONTAINERD, DOCKERD))},
                                 "master-0", ["worker-0"], ADDR, [])
        self.assertIn("worker-0 has several CRI endpoints", got["refuse"])
        self.assertIn("Nothing was changed (not drained, not deleted)", got["refuse"])
        got = kj.k8s_join_decide("check", {"master-0": probe(endpoint=DOCKERD),
                                           "worker-0": probe(sockets=(CONTAINERD, DOCKERD))},
                                 "master-0", ["worker-0"], ADDR, [])
        self.assertEqual(got["refuse"], "")

    def test_config(self):
        cmd = kj.kubeadm_join_command("kubeadm join 10.0.0.1:6443 --token %s --discovery-token-ca-cert-hash %s" % (TOKEN, HASH))
        self.assertEqual(kj.k8s_join_config(cmd, "kubeadm.k8s.io/v1beta4", DOCKERD)["nodeRegistration"],
                         {"criSocket": DOCKERD})
        self.assertNotIn("nodeRegistration", kj.k8s_join_config(cmd, "kubeadm.k8s.io/v1beta4", ""))


class Command(unittest.TestCase):
    def test_parse(self):
        for name, out in [
            ("token create --print-join-command", "kubeadm join 10.0.0.1:6443 --token %s --discovery-token-ca-cert-hash %s \n" % (TOKEN, HASH)),
            ("kubeadm init's lines", "kubeadm join 10.0.0.1:6443 --token %s \\\n\t--discovery-token-ca-cert-hash %s " % (TOKEN, HASH)),
        ]:
            with self.subTest(name):
                got = kj.kubeadm_join_command(out)
                self.assertEqual(got["error"], "")
                self.assertEqual(got["endpoint"], "10.0.0.1:6443")
                self.assertEqual(got["token"], TOKEN)
                self.assertEqual(got["token_id"], "abcdef")
                self.assertEqual(got["ca_cert_hashes"], [HASH])

    def test_errors_never_quote_the_token(self):
        for out in ["", "error: something", "kubeadm join 10.0.0.1:6443 --token %s" % TOKEN,
                    "kubeadm join --token %s --discovery-token-ca-cert-hash %s" % (TOKEN, HASH),
                    "kubeadm join 10.0.0.1:6443 --token abc.%s --discovery-token-ca-cert-hash %s" % ("x" * 16, HASH)]:
            with self.subTest(out):
                got = kj.kubeadm_join_command(out)
                self.assertNotEqual(got["error"], "")
                self.assertNotIn("0123456789abcdef", got["error"])
                self.assertEqual(got["token_id"], "")

    def test_config(self):
        cmd = kj.kubeadm_join_command("kubeadm join 10.0.0.1:6443 --token %s --discovery-token-ca-cert-hash %s" % (TOKEN, HASH))
        self.assertEqual(kj.k8s_join_config(cmd, "kubeadm.k8s.io/v1beta4"), {
            "apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "JoinConfiguration",
            "discovery": {"bootstrapToken": {"apiServerEndpoint": "10.0.0.1:6443", "token": TOKEN, "caCertHashes": [HASH]}}})

    def test_mask(self):
        self.assertEqual(kj.mask_tokens("bad token %s here" % TOKEN), "bad token abcdef.**************** here")

    def test_waiting_and_succeeded(self):
        cluster = nodes(("worker22", "10.0.0.22"), ("worker-1", ""))
        self.assertEqual(kj.k8s_join_waiting(cluster, ["worker-0", "worker-1", "worker-2"], ADDR), ["worker-0"])
        self.assertEqual(kj.k8s_join_succeeded(["a", "b", "c"], [0, 1, 0]), ["a", "c"])


class Probe(unittest.TestCase):
    """files/probe.sh with stand-in binaries on PATH, and without."""

    def run_probe(self, path):
        script = os.path.join(ROLES, "k8s_join", "files", "probe.sh")
        out = subprocess.run(["sh", script], capture_output=True, text=True, env={"PATH": path}, check=True)
        return json.loads(out.stdout)

    def test_probe(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text in [("kubeadm", '#!/bin/sh\n[ "$*" = "version -o short" ] && echo v1.29.2\n'),
                               ("kubelet", '#!/bin/sh\necho "Kubernetes v1.29.2"\n')]:
                p = os.path.join(d, name)
                with open(p, "w") as f:
                    f.write(text)
                os.chmod(p, 0o755)
            got = self.run_probe(d + ":/usr/bin:/bin")
            self.assertEqual(got["kubeadm"], os.path.join(d, "kubeadm"))
            self.assertEqual(got["kubeadm_version"], "v1.29.2")
            self.assertEqual(got["kubelet_version"], "Kubernetes v1.29.2")
            self.assertIn(got["kubelet_conf"], (True, False))
            self.assertIsInstance(got["cri_sockets"], list)
            self.assertIsInstance(got["runtime_endpoint"], str)
            decided = kj.k8s_join_decide("check", {"m": {"stdout": json.dumps(got)}, "n": {"stdout": json.dumps(got)}},
                                         "m", ["n"], {}, [])
            self.assertEqual(decided["refuse"], "")
        with tempfile.TemporaryDirectory() as empty:
            got = self.run_probe(empty + ":/usr/bin:/bin") if not os.path.exists("/usr/bin/kubeadm") else None
            if got is not None:
                self.assertEqual(got["kubeadm"], "")
                self.assertEqual(got["kubeadm_version"], "")


if __name__ == "__main__":
    unittest.main()
