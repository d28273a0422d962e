"""roles/k8s_node: which Node objects stand for the nodes to drain or
delete (by name or by InternalIP), and the refusal to guess."""

import json
import unittest

from ansible_collections.heatsible.nfv.plugins.filter import k8s_node as kn


def nodes(*spec):
    """(name, internal ip or "", cordoned) -> kubectl get nodes -o json."""
    items = []
    for name, ip, cordoned in spec:
        n = {"metadata": {"name": name}, "spec": {}, "status": {}}
        if ip:
            n["status"]["addresses"] = [{"type": "Hostname", "address": name}, {"type": "InternalIP", "address": ip}]
        if cordoned:
            n["spec"]["unschedulable"] = True
        items.append(n)
    return json.dumps({"items": items})


ADDR = {"worker-0": "10.0.0.20", "worker-1": "10.0.0.21"}


class Pick(unittest.TestCase):
    def test_cases(self):
        cases = [
            ("kubespray: by name", nodes(("worker-0", "10.0.0.20", False), ("worker-1", "10.0.0.21", False)),
             ["worker-0"], ["worker-0"], [], 0),
            ("Tacker's kubeadm names: by InternalIP", nodes(("worker20", "10.0.0.20", True), ("worker21", "10.0.0.21", False)),
             ["worker-0"], ["worker20"], [], 0),
            ("without addresses given, by name only", nodes(("worker20", "10.0.0.20", False)), ["worker-0"], [], ["worker-0"], 0),
            ("gone", nodes(("worker21", "10.0.0.21", False)), ["worker-0", "worker-1"], ["worker21"], ["worker-0"], 0),
            ("a Hostname address is not an InternalIP", json.dumps({"items": [{"metadata": {"name": "x"}, "status": {
                "addresses": [{"type": "ExternalIP", "address": "10.0.0.20"}]}}]}), ["worker-0"], [], ["worker-0"], 0),
            ("one Node by name, another by address: refused", nodes(("worker-0", "10.0.0.99", False), ("worker20", "10.0.0.20", False)),
             ["worker-0"], [], [], 1),
        ]
        for name, cluster, names, want, missing, ambiguous in cases:
            with self.subTest(name):
                addr = {} if "without addresses" in name else ADDR
                got = kn.k8s_node_pick(cluster, names, addr)
                self.assertEqual(got["nodes"], want)
                self.assertEqual(got["missing"], missing)
                self.assertEqual(len(got["ambiguous"]), ambiguous)
        got = kn.k8s_node_pick(nodes(("worker20", "10.0.0.20", True)), ["worker-0"], ADDR)
        self.assertEqual(got["found"], [{"name": "worker-0", "node": "worker20", "by": "address", "address": "10.0.0.20", "cordoned": True}])
        got = kn.k8s_node_pick(nodes(("worker-0", "10.0.0.99", False), ("worker20", "10.0.0.20", False)), ["worker-0"], ADDR)
        self.assertIn("worker-0 matches Node worker-0 by name and Node worker20 by its InternalIP 10.0.0.20", got["ambiguous"][0])


if __name__ == "__main__":
    unittest.main()
