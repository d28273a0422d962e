# -*- coding: utf-8 -*-
"""nfs_client_statd_refusal: judge the units files/dpkg.sh reported.

NFSv2/3 mounts that keep remote locks (no nolock) need rpc.statd, and
rpc.statd needs rpcbind: mount.nfs starts statd (start-statd: systemctl
start rpc-statd.service, which Requires rpcbind.socket) before each such
mount and fails it when statd does not run. A hardened image (CIS) masks
rpcbind.service and rpcbind.socket, and often rpc-statd.service too: the
node looks ready, nfs-common installs, and the kubelet's mounts of those
PersistentVolumes fail. Unmasking what the operator's hardening masked is
not heatsible's to do, so the role fails before it changes anything,
naming the host, the units, the PVs and the fix:

  worker-1: rpc-statd.service, rpcbind.service and rpcbind.socket are
  masked, but PersistentVolume nfs-pv1 (spec.mountOptions: nfsvers=3) ...
"""


def _units(lines):
    """{unit: (load_state, unit_file_state)} from dpkg.sh's "unit" lines."""
    out = {}
    for line in lines or []:
        f = line.split()
        if len(f) == 4 and f[0] == "unit":
            out[f[1]] = (f[2], f[3])
    return out


def _and(words):
    words = list(words)
    if len(words) < 2:
        return "".join(words)
    return "%s and %s" % (", ".join(words[:-1]), words[-1])


def _pv(pv):
    opts = pv.get("mount_options") or []
    return "%s (%s: %s)" % (pv.get("name"), pv.get("field") or "spec.mountOptions", ", ".join(opts))


def nfs_client_statd_refusal(lines, pvs, host, units):
    """The failure message for host ("" when nothing is in the way).

    lines: dpkg.sh's stdout lines; pvs: nfs_client_nlm_pvs (name,
    mount_options, field); units: the units dpkg.sh was asked about, in the
    order to name them. A unit is in the way when systemd has it masked
    (LoadState masked: in /etc, or in /run with mask --runtime). A unit
    systemd does not find is not: on a node without nfs-common it comes
    with the install (rpc-statd.service with nfs-common, rpcbind's with
    rpcbind, which nfs-common depends on), and a mask is seen whether the
    unit file is there or not.
    """
    if not pvs:
        return ""
    got = _units(lines)
    masked = [u for u in units if got.get(u, ("", ""))[0] == "masked"]
    if not masked:
        return ""
    runtime = [u for u in masked if got[u][1] == "masked-runtime"]
    lasting = [u for u in masked if u not in runtime]
    fix = []
    if lasting:
        fix.append("systemctl unmask " + " ".join(lasting))
    if runtime:
        fix.append("systemctl unmask --runtime " + " ".join(runtime))
    one = len(pvs) == 1
    return (
        "%s: %s %s masked (systemd), but %s %s mount%s with NFSv3 and remote locks, which need rpc.statd and "
        "rpcbind running on every node that mounts %s: the kubelet's mounts would fail there (mount.nfs: "
        "rpc.statd is not running but is required for remote locking). Nothing was changed by nfs_client. "
        "Either unmask %s on the node, if your hardening allows it (%s), or mount %s with NFSv4 "
        "(nfsvers=4.1) or without remote locks (nolock) in %s; then re-run." % (
            host, _and(masked), "is" if len(masked) == 1 else "are",
            "PersistentVolume" if one else "PersistentVolumes", _and(_pv(p) for p in pvs), "s" if one else "",
            "it" if one else "them",
            "it" if len(masked) == 1 else "them", "; ".join(fix),
            "that PersistentVolume" if one else "those PersistentVolumes",
            "its manifest" if one else "their manifests"))


class FilterModule(object):
    """The nfs_client role's filters."""

    def filters(self):
        return {"nfs_client_statd_refusal": nfs_client_statd_refusal}
