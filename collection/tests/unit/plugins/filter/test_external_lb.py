"""roles/external_lb: the kubernetes-nodeport backend heatsible keeps for a
load-balancer script of Tacker's contract (plugins/filter/haproxy_backend.py).
Where haproxy is installed, every edited file is also checked with
`haproxy -c`, the check the role runs before a file goes live."""

import os
import shutil
import subprocess
import tempfile
import unittest

from ansible_collections.heatsible.nfv.plugins.filter import haproxy_backend as hb
edit = hb.haproxy_backend_servers
from ansible_collections.heatsible.nfv.plugins.filter import external_lb as el

# Debian's default haproxy.cfg (abridged) followed by what a script of
# Tacker's contract appends, in Tacker's format; plus an operator's comment
# and blank lines, and a section after the backend.
BASE = """global
\tlog /dev/log\tlocal0
\tuser haproxy
\tgroup haproxy

defaults
\tlog\tglobal
\tmode\thttp
\ttimeout connect 5000
\ttimeout client  50000
\ttimeout server  50000
"""
TACKER = BASE + """frontend kubernetes-apiserver
    mode                 tcp
    bind                 *:8383
    option               tcplog
    default_backend      kubernetes-apiserver
backend kubernetes-apiserver
    mode        tcp
    balance     roundrobin
    server  master10 10.0.0.10:6443 check
backend kubernetes-nodeport
    mode        tcp
    balance     roundrobin
    default-server port 10256
    server  master10 10.0.0.10 check
    server  worker1 10.0.0.1 check
    server  worker12 10.0.0.12 check
# an operator's note about the next section

frontend ingress
    bind *:30080
    mode tcp
    default_backend kubernetes-nodeport
"""


def servers(out):
    return [(s["name"], s["address"]) for s in out["servers"]]


def haproxy_check(test, text):
    """haproxy -c on text, when haproxy is installed."""
    if not shutil.which("haproxy"):
        return
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write(text)
    try:
        r = subprocess.run(["haproxy", "-c", "-f", f.name], capture_output=True, text=True)
        test.assertEqual(r.returncode, 0, "haproxy -c refused:\n%s\n%s" % (r.stdout + r.stderr, text))
    finally:
        os.unlink(f.name)


class Edit(unittest.TestCase):
    def test_add_after_the_last_server_in_tackers_format(self):
        out = edit(TACKER, present=[{"name": "worker22", "address": "10.0.0.22"}])
        self.assertEqual(out["error"], "")
        self.assertTrue(out["changed"])
        self.assertEqual(out["added"], ["worker22"])
        self.assertEqual(out["content"], TACKER.replace(
            "    server  worker12 10.0.0.12 check\n",
            "    server  worker12 10.0.0.12 check\n    server  worker22 10.0.0.22 check\n"))
        self.assertEqual(servers(out)[-1], ("worker22", "10.0.0.22"))
        haproxy_check(self, out["content"])

    def test_remove_matches_the_whole_name(self):
        # Tacker's driver greps "worker1" and deletes worker12's line too
        # when it comes first; here only worker1's goes.
        out = edit(TACKER, absent=["worker1"])
        self.assertTrue(out["changed"])
        self.assertEqual(out["removed"], ["worker1"])
        self.assertEqual(out["content"], TACKER.replace("    server  worker1 10.0.0.1 check\n", ""))
        self.assertIn(("worker12", "10.0.0.12"), servers(out))
        haproxy_check(self, out["content"])
        out = edit(TACKER.replace("    server  worker1 10.0.0.1 check\n", "") + "", absent=[{"name": "worker1"}])
        self.assertFalse(out["changed"])

    def test_present_name_is_not_a_prefix_match(self):
        # worker1 is there; adding worker12's sibling worker123 adds a line.
        out = edit(TACKER, present=[{"name": "worker123", "address": "10.0.1.123"}, {"name": "worker1", "address": "10.0.0.1"}])
        self.assertEqual(out["added"], ["worker123"])
        self.assertEqual(out["updated"], [])

    def test_idempotent(self):
        want = [{"name": "worker1", "address": "10.0.0.1"}, {"name": "worker12", "address": "10.0.0.12"}]
        out = edit(TACKER, present=want)
        self.assertFalse(out["changed"])
        self.assertEqual(out["content"], TACKER)
        once = edit(TACKER, present=[{"name": "worker30", "address": "10.0.0.30"}], absent=["worker1"])
        twice = edit(once["content"], present=[{"name": "worker30", "address": "10.0.0.30"}], absent=["worker1"])
        self.assertTrue(once["changed"])
        self.assertFalse(twice["changed"])
        self.assertEqual(twice["content"], once["content"])
        self.assertEqual((twice["added"], twice["removed"], twice["updated"]), ([], [], []))

    def test_duplicates_go(self):
        dup = TACKER.replace(
            "    server  worker12 10.0.0.12 check\n",
            "    server  worker12 10.0.0.12 check\n    server  worker12 10.0.0.12 check\n    server  worker1 10.0.0.1 check\n")
        out = edit(dup, present=[{"name": "worker12", "address": "10.0.0.12"}])
        self.assertTrue(out["changed"])
        self.assertEqual(out["removed"], ["worker12"])
        self.assertEqual([n for n, _ in servers(out)].count("worker12"), 1)
        # worker1's duplicate is none of this edit's business.
        self.assertEqual([n for n, _ in servers(out)].count("worker1"), 2)
        out = edit(dup, absent=["worker1"])
        self.assertNotIn("worker1", [n for n, _ in servers(out)])
        # The same server given twice is one line.
        out = edit(TACKER, present=[{"name": "worker30", "address": "10.0.0.30"}] * 2)
        self.assertEqual(out["content"].count("worker30"), 1)

    def test_other_address_changes_only_the_address(self):
        text = TACKER.replace("    server  worker12 10.0.0.12 check", "    server  worker12 10.0.9.12:30080 check inter 5s")
        out = edit(text, present=[{"name": "worker12", "address": "10.0.0.12"}])
        self.assertEqual(out["updated"], ["worker12"])
        self.assertIn("    server  worker12 10.0.0.12:30080 check inter 5s\n", out["content"])
        # The same host with a port is in place.
        out = edit(text.replace("10.0.9.12", "10.0.0.12"), present=[{"name": "worker12", "address": "10.0.0.12"}])
        self.assertFalse(out["changed"])

    def test_masters_and_other_sections_untouched(self):
        # A worker named like a master's line in another backend: only the
        # nodeport backend is edited; master lines are never in present or
        # absent, and other sections' servers of the same name stay.
        text = TACKER.replace("    server  master10 10.0.0.10:6443 check", "    server  master10 10.0.0.10:6443 check\n    server  worker1 10.0.0.1:6443 check")
        out = edit(text, absent=["worker1"])
        self.assertIn("    server  worker1 10.0.0.1:6443 check\n", out["content"])
        self.assertIn("    server  master10 10.0.0.10 check\n", out["content"])
        self.assertNotIn("    server  worker1 10.0.0.1 check\n", out["content"])

    def test_comments_and_blank_lines_kept(self):
        text = TACKER.replace(
            "    balance     roundrobin\n    default-server",
            "    balance     roundrobin\n\n    # workers below\n    default-server")
        out = edit(text, present=[{"name": "worker40", "address": "10.0.0.40"}], absent=["worker1"])
        want = text.replace("    server  worker1 10.0.0.1 check\n", "").replace(
            "    server  worker12 10.0.0.12 check\n",
            "    server  worker12 10.0.0.12 check\n    server  worker40 10.0.0.40 check\n")
        self.assertEqual(out["content"], want)
        self.assertIn("# an operator's note about the next section\n\nfrontend ingress", out["content"])

    def test_commented_out_server_is_not_a_server(self):
        text = TACKER.replace("    server  worker1 10.0.0.1 check", "#    server  worker1 10.0.0.1 check")
        out = edit(text, present=[{"name": "worker1", "address": "10.0.0.1"}])
        self.assertEqual(out["added"], ["worker1"])
        self.assertIn("#    server  worker1 10.0.0.1 check\n", out["content"])

    def test_backend_without_servers_or_last_in_file(self):
        text = BASE + ("frontend f\n    mode tcp\n    bind *:30080\n    default_backend kubernetes-nodeport\n"
                       "backend kubernetes-nodeport\n    mode tcp\n    balance roundrobin\n    default-server port 10256\n\n# trailer\n")
        out = edit(text, present=[{"name": "worker5", "address": "10.0.0.5"}])
        self.assertEqual(out["content"], text.replace(
            "    default-server port 10256\n",
            "    default-server port 10256\n    server  worker5 10.0.0.5 check\n"))
        haproxy_check(self, out["content"])
        # No final newline, backend last: the text is kept as it was around it.
        text = BASE + "backend kubernetes-nodeport\n    default-server port 10256\n    server  worker1 10.0.0.1 check"
        out = edit(text, present=[{"name": "worker2", "address": "10.0.0.2"}])
        self.assertTrue(out["content"].endswith("worker1 10.0.0.1 check\n    server  worker2 10.0.0.2 check"))

    def test_no_backend(self):
        for text in (BASE, "", None, BASE + "backend kubernetes-nodeport-2\n    server  worker1 10.0.0.1 check\n"):
            out = edit(text, present=[{"name": "worker1", "address": "10.0.0.1"}])
            self.assertFalse(out["found"])
            self.assertFalse(out["changed"])
            self.assertIn('no "backend kubernetes-nodeport"', out["error"])

    def test_two_backends_refused(self):
        out = edit(TACKER + "backend kubernetes-nodeport\n    server  worker1 10.0.0.1 check\n", present=[{"name": "worker9", "address": "10.0.0.9"}])
        self.assertFalse(out["found"])
        self.assertIn("2 \"backend kubernetes-nodeport\" sections", out["error"])
        self.assertFalse(out["changed"])

    def test_check_mode_inputs_only_read(self):
        # The filter never writes: check mode shows its content as a diff.
        text = str(TACKER)
        edit(text, present=[{"name": "worker22", "address": "10.0.0.22"}], absent=["worker1"])
        self.assertEqual(text, TACKER)

    def test_bad_input_refused(self):
        for present, absent, msg in (
            ([{"name": "worker1\n    server evil", "address": "10.0.0.1"}], [], "not a haproxy server name"),
            ([{"name": "worker1", "address": "10.0.0.1 backup"}], [], "not an IP address"),
            ([{"name": "worker1", "address": "fd00::1"}], [], "IPv4"),
            ([{"name": "worker1", "address": "10.0.0.1"}, {"name": "worker1", "address": "10.0.0.2"}], [], "given twice"),
            ([{"name": "worker1", "address": "10.0.0.1"}], ["worker1"], "both to add and to remove"),
            ([], ["bad name"], "not a haproxy server name"),
            (["worker1"], [], "not a mapping"),
        ):
            out = edit(TACKER, present=present, absent=absent)
            self.assertIn(msg, out["error"])
            self.assertFalse(out["changed"])
            self.assertEqual(out["content"], TACKER)

    def test_haproxy_refuses_tackers_portless_checks(self):
        # Tacker's own backend (no default-server port) with a check on a
        # server without port: haproxy 2.6 refuses the file; the role's
        # haproxy -c then keeps it from going live.
        if not shutil.which("haproxy"):
            self.skipTest("haproxy is not installed")
        text = TACKER.replace("    default-server port 10256\n", "")
        with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
            f.write(text)
        try:
            r = subprocess.run(["haproxy", "-c", "-f", f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        if r.returncode == 0:
            self.skipTest("this haproxy accepts port-less checks")
        self.assertIn("neither service port nor check port", r.stdout + r.stderr)


class RoleRoutes(unittest.TestCase):
    def test_routes_name_their_server(self):
        # The role passes its routes: node name in name, server name in
        # server.
        routes = [{"name": "workernode-abc", "address": "10.0.0.30", "server": "worker30"}]
        out = edit(TACKER, present=routes, name_key="server")
        self.assertEqual(out["added"], ["worker30"])
        self.assertIn("    server  worker30 10.0.0.30 check\n", out["content"])
        out = edit(out["content"], absent=routes, name_key="server")
        self.assertEqual(out["content"], TACKER)
        self.assertEqual(out["removed"], ["worker30"])


def ran(args, lines, changed=False, check=False):
    """A registered result of SCRIPT ARGS..., as the command module gives it."""
    cmd = ["/usr/local/lib/heatsible/external_lb.sh"] + (["--check"] if check else []) + args
    return {"cmd": cmd, "rc": 0, "stdout": "\n".join(lines), "stdout_lines": lines, "changed": changed}


class Interface(unittest.TestCase):
    """heatsible's script interface: a mutating command's last line is
    "changed" or "unchanged" (tasks/heatsible.yml)."""

    def test_kept(self):
        results = [ran(["install"], ["haproxy installed", "changed"], True),
                   ran(["add-route", "worker-1", "10.10.0.21"], ["unchanged"]),
                   {"skipped": True, "changed": False}]
        self.assertEqual(el.external_lb_broken(results), [])
        self.assertEqual(el.external_lb_said(results), ["haproxy installed"])

    def test_broken_names_the_command_and_its_last_line(self):
        results = [ran(["add-route", "worker-1", "10.10.0.21"], ["route added"], True),
                   ran(["remove-route", "worker-2"], [], check=True),
                   ran(["install"], ["changed", "extra"])]
        self.assertEqual(el.external_lb_broken(results), [
            "add-route worker-1 10.10.0.21 -> route added",
            "--check remove-route worker-2 -> (no output)",
            "install -> extra",
        ])

    def test_a_skipped_command_is_not_judged(self):
        self.assertEqual(el.external_lb_broken([{"skipped": True, "changed": False, "skip_reason": "x"}]), [])

    def test_said_keeps_order_and_leaves_unchanged_out(self):
        results = [ran(["add-route", "a", "10.0.0.1"], ["frontend a", "backend a", "changed"], True),
                   ran(["add-route", "b", "10.0.0.2"], ["nothing", "unchanged"], False),
                   ran(["remove-route", "c"], ["c gone", "changed"], True)]
        self.assertEqual(el.external_lb_said(results), ["frontend a", "backend a", "c gone"])
        self.assertEqual(el.external_lb_said([]), [])


class Alerts(unittest.TestCase):
    """What a refusal quotes of haproxy -c's output."""

    def result(self, out, err):
        return {"rc": 1, "stdout": "\n".join(out), "stdout_lines": out, "stderr": "\n".join(err), "stderr_lines": err}

    def test_many_alerts_first_two_and_the_verdict(self):
        err = ["[NOTICE]   (1) : haproxy version is 2.6.12"] + [
            "[ALERT]    (1) : config : [/tmp/x.cfg:%d] : 'server worker%d' : health checks require a port" % (40 + i, i)
            for i in range(4)] + ["[ALERT]    (1) : config : Fatal errors found in configuration."]
        self.assertEqual(hb.haproxy_alerts(self.result([], err)), [err[1], err[2], err[-1]])

    def test_few_alerts_and_errors(self):
        out = ["Configuration file has an error"]
        err = ["[WARNING]  (1) : something", "[ALERT]    (1) : config : Fatal errors found in configuration."]
        self.assertEqual(hb.haproxy_alerts(self.result(out, err)), [out[0], err[1]])

    def test_nothing_recognisable_quotes_stderr(self):
        self.assertEqual(hb.haproxy_alerts(self.result([], ["haproxy: not found"])), ["haproxy: not found"])
        self.assertEqual(hb.haproxy_alerts({"stderr": "", "stdout_lines": [], "stderr_lines": []}), [""])


class ScriptEnv(unittest.TestCase):
    def test_proxies_only_both(self):
        both = {"http_proxy": "http://p:3128", "https_proxy": "http://p:3129", "no_proxy": "10.0.0.0/8"}
        self.assertEqual(hb.tacker_script_env(both, {}), {"http_proxy": "http://p:3128", "https_proxy": "http://p:3129"})
        self.assertEqual(hb.tacker_script_env({"http_proxy": "http://p:3128"}, {"A": "1"}), {"A": "1"})
        self.assertEqual(hb.tacker_script_env(None, None), {})


if __name__ == "__main__":
    unittest.main()
