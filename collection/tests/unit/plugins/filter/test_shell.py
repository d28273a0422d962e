"""with_json_encoder: the probes' one copy of j(), run for real by sh and
bash on hostile values (each must come back as the same JSON string, minus
the control characters j() drops), and the probes as their tasks send them."""

import json
import os
import subprocess
import unittest

from ansible_collections.heatsible.nfv.tests.unit.plugins.filter.helpers import ROLES

from ansible_collections.heatsible.nfv.plugins.filter import shell

VALUES = [
    "/volume/pv1",
    "",
    'a "quoted" path',
    "back\\slash",
    "tab\there",
    "new\nline",
    "\x01bell\x07 and escape \x1b[0m",
    "$(touch /tmp/hs-pwned) `id` ; rm -rf /",
    "dollar $HOME and 'single' quotes",
    "UTF-8: caf\u00e9",
]

# what j() keeps: every control character but tab and newline is dropped
DROPPED = "".join(chr(c) for c in range(0, 32) if chr(c) not in "\t\n")


def run(sh, value):
    script = shell.with_json_encoder('j "$1"')
    out = subprocess.run([sh, "-c", script, sh, value], capture_output=True, check=True)
    return json.loads(out.stdout.decode("utf-8"))


class Encoder(unittest.TestCase):
    def test_round_trip(self):
        for sh in ("sh", "bash"):
            for value in VALUES:
                with self.subTest(sh=sh, value=value):
                    want = value.translate({ord(c): None for c in DROPPED})
                    self.assertEqual(run(sh, value), want)

    def test_nothing_runs(self):
        run("sh", "$(touch /tmp/hs-with-json-encoder-pwned)")
        self.assertFalse(os.path.exists("/tmp/hs-with-json-encoder-pwned"))

    def test_probes_parse_with_it(self):
        # each probe, as its task sends it, is valid shell (sh -n / bash -n)
        for role, name, sh in (("cinder_volume", "probe.sh", "sh"),
                               ("nfs_server", "state.sh", "sh"),
                               ("nfs_server", "verify.sh", "bash")):
            with self.subTest(script=name):
                with open(os.path.join(ROLES, role, "files", name), encoding="utf-8") as f:
                    script = shell.with_json_encoder(f.read())
                subprocess.run([sh, "-n", "-c", script], check=True)


if __name__ == "__main__":
    unittest.main()
