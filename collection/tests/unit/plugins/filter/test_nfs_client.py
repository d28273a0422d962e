"""roles/nfs_client: the judgement of files/dpkg.sh's unit lines and the
failure message for a node whose rpc-statd or rpcbind is masked (issue 28).
The role itself runs in roles/nfs_client_test.go."""

import unittest

from ansible_collections.heatsible.nfv.plugins.filter import nfs_client as nc

UNITS = ["rpc-statd.service", "rpcbind.service", "rpcbind.socket"]
PV1 = {"name": "nfs-pv1", "mount_options": ["nfsvers=3", "hard"], "field": "spec.mountOptions"}
PV2 = {"name": "nfs-pv2", "mount_options": ["v3", "local_lock=all"],
       "field": "metadata.annotations[volume.beta.kubernetes.io/mount-options]"}


def lines(*states):
    return ["installed nfs-common"] + ["unit %s %s %s" % s for s in states]


class StatdRefusal(unittest.TestCase):

    def test_no_nlm_pv(self):
        got = lines(("rpcbind.service", "masked", "masked"))
        self.assertEqual(nc.nfs_client_statd_refusal(got, [], "w1", UNITS), "")

    def test_nothing_masked(self):
        got = lines(("rpc-statd.service", "loaded", "enabled"), ("rpcbind.service", "loaded", "enabled"),
                    ("rpcbind.socket", "loaded", "enabled"))
        self.assertEqual(nc.nfs_client_statd_refusal(got, [PV1], "w1", UNITS), "")

    def test_not_found_is_not_in_the_way(self):
        # a node without nfs-common: the install brings the units
        got = ["unit %s not-found -" % u for u in UNITS]
        self.assertEqual(nc.nfs_client_statd_refusal(got, [PV1], "w1", UNITS), "")

    def test_no_unit_lines(self):
        # a host systemd did not boot: dpkg.sh prints none
        self.assertEqual(nc.nfs_client_statd_refusal(["installed nfs-common"], [PV1], "w1", UNITS), "")

    def test_two_pvs_two_units(self):
        got = lines(("rpc-statd.service", "loaded", "enabled"), ("rpcbind.socket", "masked", "masked"),
                    ("rpcbind.service", "masked", "masked"))
        self.assertEqual(
            nc.nfs_client_statd_refusal(got, [PV1, PV2], "workernode-a1", UNITS),
            "workernode-a1: rpcbind.service and rpcbind.socket are masked (systemd), but PersistentVolumes "
            "nfs-pv1 (spec.mountOptions: nfsvers=3, hard) and nfs-pv2 "
            "(metadata.annotations[volume.beta.kubernetes.io/mount-options]: v3, local_lock=all) mount with NFSv3 "
            "and remote locks, which need rpc.statd and rpcbind running on every node that mounts them: the "
            "kubelet's mounts would fail there (mount.nfs: rpc.statd is not running but is required for remote "
            "locking). Nothing was changed by nfs_client. Either unmask them on the node, if your hardening "
            "allows it (systemctl unmask rpcbind.service rpcbind.socket), or mount those PersistentVolumes with "
            "NFSv4 (nfsvers=4.1) or without remote locks (nolock) in their manifests; then re-run.")

    def test_runtime_and_lasting_masks(self):
        got = lines(("rpc-statd.service", "masked", "masked"), ("rpcbind.service", "loaded", "enabled"),
                    ("rpcbind.socket", "masked", "masked-runtime"))
        msg = nc.nfs_client_statd_refusal(got, [PV1], "w1", UNITS)
        self.assertIn("w1: rpc-statd.service and rpcbind.socket are masked (systemd)", msg)
        self.assertIn("(systemctl unmask rpc-statd.service; systemctl unmask --runtime rpcbind.socket)", msg)

    def test_one_unit(self):
        got = lines(("rpc-statd.service", "masked", "masked"))
        msg = nc.nfs_client_statd_refusal(got, [PV1], "w1", UNITS)
        self.assertTrue(msg.startswith("w1: rpc-statd.service is masked (systemd), but PersistentVolume nfs-pv1 "
                                       "(spec.mountOptions: nfsvers=3, hard) mounts with"), msg)
        self.assertIn("Either unmask it on the node, if your hardening allows it (systemctl unmask "
                      "rpc-statd.service), or mount that PersistentVolume", msg)


if __name__ == "__main__":
    unittest.main()
