"""roles/kubeconfig: the choice of the admin kubeconfig (filter plugin) and
the probe that feeds it (files/find.sh, run for real against files in a
temporary directory)."""

import json
import os
import subprocess
import tempfile
import unittest

from helpers import ROLES

from ansible_collections.heatsible.nfv.plugins.filter import kubeconfig as kc

USER = "/home/ubuntu/.kube/config"
ADMIN = "/etc/kubernetes/admin.conf"
ROOT = "/root/.kube/config"


def probe(states, kubectl="/usr/local/bin/kubectl"):
    paths = [{"path": p, "state": s} for p, s in states]
    return {"rc": 0, "stdout": json.dumps({"user": "ubuntu", "kubectl": kubectl, "paths": paths}), "stderr": ""}


class Choice(unittest.TestCase):
    def test_order_and_become(self):
        cases = [
            ("kubeadm scripts: the user's own", [(USER, "user"), (ADMIN, "root"), (ROOT, "missing")], USER, False),
            ("kubespray: admin.conf through sudo", [(USER, "missing"), (ADMIN, "root"), (ROOT, "root")], ADMIN, True),
            ("only root's copy", [(USER, "missing"), (ADMIN, "missing"), (ROOT, "root")], ROOT, True),
            ("a user file root owns", [(USER, "root"), (ADMIN, "root"), (ROOT, "root")], USER, True),
            ("not a file is skipped", [(USER, "not-a-file"), (ADMIN, "root"), (ROOT, "root")], ADMIN, True),
            ("world-readable admin.conf", [(USER, "missing"), (ADMIN, "user"), (ROOT, "root")], ADMIN, False),
        ]
        for name, states, path, become in cases:
            with self.subTest(name):
                got = kc.kubeconfig_choice(probe(states), "", "master-0")
                self.assertEqual(got["error"], "")
                self.assertEqual(got["path"], path)
                self.assertEqual(got["become"], become)
                self.assertEqual(got["kubectl"], ["/usr/local/bin/kubectl", "--kubeconfig", path])
                self.assertEqual(got["msg"], "master-0: kubectl reads %s %s" % (path, "through sudo (root only)" if become else "as ubuntu"))

    def test_none_names_every_path_and_the_setting(self):
        got = kc.kubeconfig_choice(probe([(USER, "missing"), (ADMIN, "missing"), (ROOT, "unreadable")]), "", "master-0")
        self.assertEqual(got["path"], "")
        self.assertEqual(got["msg"], got["error"])
        self.assertEqual(
            got["error"],
            "no admin kubeconfig for kubectl on master-0: tried /home/ubuntu/.kube/config (missing), "
            "/etc/kubernetes/admin.conf (missing), /root/.kube/config (not readable, not even by root). "
            "Nothing was changed. kubespray leaves it in /etc/kubernetes/admin.conf and /root/.kube/config "
            "(read through sudo), kubeadm scripts copy it to the SSH user's ~/.kube/config; give its path "
            "on the first master with additionalParams.k8s_cluster_installation_param.master_node.kubeconfig "
            "in the request, or heatsible run --kubeconfig PATH.")

    def test_setting_is_the_only_candidate(self):
        got = kc.kubeconfig_choice(probe([("/srv/k/admin.conf", "root")]), "/srv/k/admin.conf", "master-0")
        self.assertEqual((got["path"], got["become"], got["error"]), ("/srv/k/admin.conf", True, ""))
        got = kc.kubeconfig_choice(probe([("/srv/k/admin.conf", "missing")]), "/srv/k/admin.conf", "master-0")
        self.assertEqual(got["path"], "")
        self.assertIn("the admin kubeconfig /srv/k/admin.conf given for kubectl is not usable on master-0: "
                      "/srv/k/admin.conf (missing). Nothing was changed.", got["error"])

    def test_no_kubectl(self):
        got = kc.kubeconfig_choice(probe([(USER, "user")], kubectl=""), "", "master-0")
        self.assertEqual(got["error"], "kubectl is not installed on master-0 (not in root's PATH). Nothing was changed.")

    def test_probe_without_report(self):
        got = kc.kubeconfig_choice({"rc": 127, "stdout": "", "stderr": "sh: 1: sudo: not found"}, "", "master-0")
        self.assertIn("could not look for the admin kubeconfig on master-0: the probe printed no report "
                      "(sh: 1: sudo: not found)", got["error"])


class FindScript(unittest.TestCase):
    """files/find.sh for real: root looks at files for an unprivileged user."""

    def run_find(self, user, *paths):
        script = os.path.join(ROLES, "kubeconfig", "files", "find.sh")
        env = dict(os.environ, SUDO_USER=user)
        out = subprocess.run(["sh", script, "sh"] + list(paths), env=env, stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        return json.loads(out)

    @unittest.skipUnless(os.geteuid() == 0, "needs root (as the role runs it, through sudo)")
    def test_states(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            mine, roots, sub = os.path.join(d, "mine"), os.path.join(d, "roots"), os.path.join(d, "dir")
            for p, mode in ((mine, 0o644), (roots, 0o600)):
                with open(p, "w") as f:
                    f.write("apiVersion: v1\n")
                os.chmod(p, mode)
            os.mkdir(sub)
            quoted = os.path.join(d, 'a "quoted" \\ name')
            got = self.run_find("nobody", mine, roots, sub, os.path.join(d, "none"), quoted, "~/.kube/config")
            self.assertEqual(got["user"], "nobody")
            self.assertEqual([p["state"] for p in got["paths"]], ["user", "root", "not-a-file", "missing", "missing", "missing"])
            self.assertEqual(got["paths"][4]["path"], quoted)
            home = subprocess.run(["getent", "passwd", "nobody"], stdout=subprocess.PIPE, universal_newlines=True).stdout.split(":")[5]
            self.assertEqual(got["paths"][5]["path"], home + "/.kube/config")
            self.assertTrue(got["kubectl"].endswith("/sh"))


if __name__ == "__main__":
    unittest.main()
