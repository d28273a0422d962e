# -*- coding: utf-8 -*-
"""The k8s_join role's judgement (runs on the controller, unit-tested in
tests/unit/plugins/filter/test_k8s_join.py).

k8s_join_decide: from every host's probe (files/probe.sh) and, for a join,
the cluster's Nodes, what to do: refuse (and why), or which nodes join and
with which JoinConfiguration version.
kubeadm_join_command: the parts of "kubeadm token create --print-join-command"
output (the token among them: keep the result no_log).
k8s_join_config: the JoinConfiguration document for a node.
k8s_join_waiting: the joined nodes that have no Node object yet.

Nothing here ever puts a token into a message.
"""

import json
import re

TOKEN = re.compile(r"\b([a-z0-9]{6})\.([a-z0-9]{16})\b")
VERSION = re.compile(r"^v?(\d+)\.(\d+)")

# Where a refusal tells the operator to go instead.
# What the heal-start check assumes and cannot prove: a look at the node
# (or its peers) cannot tell kubeadm that came with the image or the user
# data, which Heat's replacement gets too, from kubeadm installed by hand
# after boot, which it does not. The messages say so.
ASSUMES = ("heatsible assumes that Heat builds the replacement from the same image and user data, and "
           "cannot tell kubeadm and a kubelet that came with them from ones installed by hand after boot, "
           "which the replacement would lack")

WAYS_OUT = (
    "Either boot the nodes from an image that has kubeadm and a kubelet, give the request "
    "ansible.kubespray_root_path (kubespray then removes and re-adds the node), or have the VNF "
    "manager join the node itself and run heatsible with --tags nfs_client (the shim's kubeadm variant)."
)


def _unsafe(value):
    try:
        from ansible.utils.unsafe_proxy import wrap_var
    except ImportError:  # the unit tests run without Ansible
        return value
    return wrap_var(value)


def mask_tokens(text):
    """Any bootstrap token's secret part masked (for messages built from a
    command's output)."""
    return TOKEN.sub(lambda m: m.group(1) + ".****************", text or "")


def _probe(raw):
    """A probe result (registered raw result, its stdout, or missing; or a
    list of registered results, the first that ran counting):
    {"state": "ok"|"unreachable"|"absent"|"broken", ...probe fields}."""
    if isinstance(raw, (list, tuple)):
        ran = [r for r in raw if r is not None and not (isinstance(r, dict) and r.get("skipped"))]
        raw = ran[0] if ran else None
    if raw is None or (isinstance(raw, dict) and raw.get("skipped")):
        return {"state": "absent"}
    if isinstance(raw, dict):
        if raw.get("unreachable"):
            return {"state": "unreachable", "msg": (raw.get("msg") or "").strip()}
        stdout = raw.get("stdout", "")
    else:
        stdout = raw
    try:
        p = json.loads(stdout)
        if not isinstance(p, dict):
            raise ValueError
    except (ValueError, TypeError):
        err = raw.get("stderr", "") if isinstance(raw, dict) else ""
        return {"state": "broken", "msg": (err or stdout or "no output").strip()[:300]}
    p["state"] = "ok"
    return p


def api_version(version):
    """The JoinConfiguration apiVersion kubeadm VERSION reads ("" when it is
    too old for heatsible)."""
    m = VERSION.match(version or "")
    if not m or m.group(1) != "1":
        return ""
    minor = int(m.group(2))
    if minor >= 31:
        return "kubeadm.k8s.io/v1beta4"
    if minor >= 22:
        return "kubeadm.k8s.io/v1beta3"
    if minor >= 15:
        return "kubeadm.k8s.io/v1beta2"
    return ""


def _lacks(p):
    """What a reachable host lacks for a join, as words ("has no kubeadm";
    "" when nothing)."""
    kubeadm, kubelet = bool(p.get("kubeadm")), bool(p.get("kubelet"))
    if not kubeadm and not kubelet:
        return "has neither kubeadm nor a kubelet"
    if not kubeadm:
        return "has no kubeadm"
    if not kubelet:
        return "has no kubelet"
    return ""


def _has(p):
    return "kubeadm %s and a kubelet (%s)" % (p.get("kubeadm_version") or "(version unknown)",
                                              p.get("kubelet_version") or p.get("kubelet"))


def _endpoint_path(url):
    """A CRI endpoint's socket path, /run and /var/run as one (on every
    distribution kubeadm supports /var/run is a link to /run)."""
    path = (url or "").strip()
    if path.startswith("unix://"):
        path = path[len("unix://"):]
    if path.startswith("/run/"):
        path = "/var/run/" + path[len("/run/"):]
    return path


CRI_FIX = ("Leave the node one CRI endpoint, the cluster's: remove (or stop, and take its socket away) the container "
           "runtime the cluster does not use, in the node's image or user data for a replacement, or on the node "
           "itself; or have the first master's kubelet name the cluster's (containerRuntimeEndpoint in "
           "/var/lib/kubelet/config.yaml) when that is among the node's. Then run the same command again.")


def _cri_socket(node, p, master, mp):
    """The criSocket for node's JoinConfiguration: "" when kubeadm finds
    the one endpoint itself (none or one answers), the endpoint of the
    first master's kubelet when the node has several and it is among them.
    Returns (socket, problem)."""
    sockets = p.get("cri_sockets") or []
    if len(sockets) <= 1:
        return "", ""
    want = mp.get("runtime_endpoint") or ""
    for sock in sockets:
        if want and _endpoint_path(sock) == _endpoint_path(want):
            return sock, ""
    names = ("names none (containerRuntimeEndpoint in /var/lib/kubelet/config.yaml, --container-runtime-endpoint "
             "in /var/lib/kubelet/kubeadm-flags.env)" if not want else "names %s, which is not among them" % want)
    return "", ("%s has several CRI endpoints (%s), among which kubeadm 1.24+ does not choose (\"found multiple CRI "
                "endpoints on the host\"), and heatsible cannot tell which one the cluster uses: the first master "
                "%s's kubelet %s" % (node, ", ".join(sockets), master, names))


def _internal_ips(node):
    return [a.get("address") for a in (node.get("status") or {}).get("addresses") or []
            if a.get("type") == "InternalIP" and a.get("address")]


def _nodes_of(name, address, items):
    """The Node objects that stand for host name: by name, or by address."""
    hits = []
    for n in items:
        nn = (n.get("metadata") or {}).get("name")
        if nn == name or (address and address in _internal_ips(n)):
            hits.append(nn)
    return hits


def _master_problem(master, p):
    if p["state"] != "ok":
        return "could not look at the first master %s (%s): %s" % (master, p["state"], p.get("msg", ""))
    if not p.get("kubeadm"):
        return ("the first master %s has no kubeadm (not in root's PATH): heatsible makes the join command "
                "there (kubeadm token create --print-join-command)" % master)
    return ""


def k8s_join_decide(action, probes, master, nodes, addresses=None, peers=None, cluster=None, booting=None):
    """Decide, before anything changes.

    action: "check" (heal-start of nodes[0]: can heal-end bring it back?) or
    "join" (heal-end, scale-end: join nodes).
    probes: {host: registered probe result} (hosts outside --limit absent).
    addresses: {host: internal address}; peers: the other workers (check:
    the evidence when the node does not answer); cluster: kubectl get nodes
    -o json (join); booting: the nodes to join whose cloud-init or dpkg
    lock apt_wait found busy in check mode (a real run waits first, so what
    they lack now is not yet a refusal: the check says so).

    Returns {"refuse": message or "", "msg": what was found, "join": [hosts],
    "joined": {host: Node name}, "api_versions": {host: apiVersion}}.
    """
    addresses = addresses or {}
    peers = peers or []
    probes = probes or {}
    out = {"refuse": "", "msg": "", "join": [], "joined": {}, "api_versions": {}, "cri_sockets": {}}
    mp = _probe(probes.get(master))
    why = _master_problem(master, mp)
    if why:
        out["refuse"] = why + ". Nothing was changed. " + WAYS_OUT
        return _unsafe(out)

    if action == "check":
        node = nodes[0]
        p = _probe(probes.get(node))
        if p["state"] == "ok":
            lacks = _lacks(p)
            if lacks:
                out["refuse"] = (
                    "%s %s: its replacement, booted from the same image, would have none either (%s), so "
                    "heal-end could not join it again, and heal-start would leave the cluster without it. "
                    "Nothing was changed (not drained, not deleted). %s" % (node, lacks, ASSUMES, WAYS_OUT))
                return _unsafe(out)
            _, cri = _cri_socket(node, p, master, mp)
            if cri:
                out["refuse"] = ("%s: its replacement, booted from the same image, would have them too, so "
                                 "heal-end could not join it. Nothing was changed (not drained, not deleted). %s"
                                 % (cri, CRI_FIX))
                return _unsafe(out)
            out["msg"] = ("%s has %s; %s can make a join command: heal-end can join its replacement, "
                          "if it has them too (%s: heal-end first waits for the replacement's cloud-init (as long as heal-end's --wait cloud-init allows), then looks again and refuses, joining nothing, if they are still missing)" % (
                              node, _has(p), master, ASSUMES))
            return _unsafe(out)
        # The node does not answer (a dead VM is the usual reason to heal
        # it): the other workers, booted from the same image, stand for it.
        reason = {"unreachable": "does not answer", "absent": "is outside --limit",
                  "broken": "could not be probed"}.get(p["state"], p["state"])
        seen, bad = [], []
        for peer in peers:
            q = _probe(probes.get(peer))
            if q["state"] != "ok":
                continue
            lacks = _lacks(q)
            if lacks:
                bad.append("%s %s" % (peer, lacks))
            else:
                seen.append(peer)
        if bad:
            out["refuse"] = (
                "%s %s, and the other workers, booted from the same image as its replacement, lack what a join "
                "needs: %s. heal-end could not join the replacement. Nothing was changed. %s"
                % (node, reason, "; ".join(bad), WAYS_OUT))
            return _unsafe(out)
        if not seen:
            out["refuse"] = (
                "%s %s and no other worker answers: heatsible cannot tell whether its replacement will have "
                "kubeadm and a kubelet, so it does not remove the node. Nothing was changed. Run heal-start "
                "again when a worker answers, or %s" % (node, reason, WAYS_OUT[0].lower() + WAYS_OUT[1:]))
            return _unsafe(out)
        out["msg"] = ("%s %s; the other workers (same image as its replacement) have kubeadm and a kubelet: %s "
                      "(%s: heal-end first waits for the replacement's cloud-init (as long as heal-end's --wait cloud-init allows), then looks again and refuses, joining nothing, if they are still missing)"
                      % (node, reason, ", ".join(seen), ASSUMES))
        return _unsafe(out)

    # action == "join"
    if isinstance(cluster, str):
        cluster = json.loads(cluster or "{}")
    items = (cluster or {}).get("items") or []
    problems, done, todo, waiting = [], [], [], []
    other, cri_problem = False, False  # which ways out the refusal names
    booting = booting or []
    for node in nodes:
        p = _probe(probes.get(node))
        if p["state"] != "ok":
            problems.append("%s could not be probed (%s): %s" % (node, p["state"], p.get("msg", "")))
            continue
        addr = addresses.get(node, "")
        hits = _nodes_of(node, addr, items)
        if len(hits) > 1:
            problems.append("%s matches Node objects %s (by name or InternalIP %s): delete the stale one first"
                            % (node, " and ".join(hits), addr))
            continue
        if p.get("kubelet_conf"):
            if hits:
                out["joined"][node] = hits[0]
                done.append("%s (Node %s)" % (node, hits[0]))
            else:
                problems.append(
                    "%s has joined a cluster (/etc/kubernetes/kubelet.conf exists) but no Node here has its name "
                    "or its address %s: heatsible does not reset a node (kubeadm reset); check that it is the "
                    "right VM, reset it, and run again" % (node, addr or "(unknown)"))
            continue
        mine = []  # every reason this node cannot join, not just the first
        if hits:
            mine.append(
                "Node %s has %s's name or address %s, but %s has not joined (no /etc/kubernetes/kubelet.conf): it "
                "is the Node of the VM this one replaced; remove it first (heal-start --node %s drains and deletes "
                "it), then run again" % (hits[0], node, addr or "(unknown)", node, node))
        lacks = _lacks(p)
        if lacks:
            mine.append("%s %s" % (node, lacks))
        av = api_version(p.get("kubeadm_version"))
        if not lacks and not av:
            mine.append("%s has kubeadm %s, which heatsible cannot give a JoinConfiguration "
                        "(it writes kubeadm.k8s.io/v1beta2 to v1beta4: kubeadm 1.15 and later)"
                        % (node, p.get("kubeadm_version") or "(no version)"))
        if lacks and node in booting and len(mine) == 1:
            # check mode: the real run waits for cloud-init, then looks again
            waiting.append("%s (%s now)" % (node, lacks))
            continue
        if mine:
            problems.extend(mine)
            other = True
            continue
        sock, cri = _cri_socket(node, p, master, mp)
        if cri:
            problems.append(cri)
            cri_problem = True
            continue
        if sock:
            out["cri_sockets"][node] = sock
        out["api_versions"][node] = av
        todo.append(node)
    if problems:
        ways = [WAYS_OUT] if other or not cri_problem else []
        if cri_problem:
            ways.append(CRI_FIX)
        out["refuse"] = ("cannot join with kubeadm: %s. Nothing was changed. %s"
                         % ("; ".join(problems), " ".join(ways)))
        out["join"] = []
        return _unsafe(out)
    out["join"] = todo
    parts = []
    if todo:
        parts.append("to join: %s (join command from %s)" % (", ".join(todo), master))
    for node, sock in sorted(out["cri_sockets"].items()):
        parts.append("%s has several CRI endpoints: criSocket %s, the one the first master's kubelet uses"
                     % (node, sock))
    if waiting:
        parts.append("still booting: %s; a real run waits for their cloud-init and dpkg lock (as long as --wait cloud-init "
                     "allows), then looks again, and refuses, joining nothing, if they still lack kubeadm or "
                     "a kubelet (check mode: whether they can join is known only then)" % "; ".join(waiting))
    if done:
        parts.append("already joined: %s" % ", ".join(done))
    out["msg"] = "; ".join(parts)
    return _unsafe(out)


def kubeadm_join_command(stdout):
    """Parses "kubeadm join HOST:PORT --token ID.SECRET
    --discovery-token-ca-cert-hash sha256:H [...]" (one line, as kubeadm
    token create --print-join-command prints it; the backslash-newlines of
    kubeadm init's output are accepted too). Returns {"endpoint", "token",
    "token_id", "ca_cert_hashes", "error"}; error never quotes the input."""
    out = {"endpoint": "", "token": "", "token_id": "", "ca_cert_hashes": [], "error": ""}
    words = (stdout or "").replace("\\\n", " ").split()
    try:
        i = words.index("join")
        if i == 0 or not words[i - 1].endswith("kubeadm"):
            raise ValueError
    except ValueError:
        out["error"] = "the output of kubeadm token create --print-join-command has no 'kubeadm join' command"
        return _unsafe(out)
    args = words[i + 1:]
    j = 0
    while j < len(args):
        a = args[j]
        val = args[j + 1] if j + 1 < len(args) else ""
        if a == "--token":
            out["token"] = val
            j += 2
        elif a == "--discovery-token-ca-cert-hash":
            out["ca_cert_hashes"].append(val)
            j += 2
        elif a.startswith("--"):
            j += 1
        elif not out["endpoint"]:
            out["endpoint"] = a
            j += 1
        else:
            j += 1
    m = TOKEN.fullmatch(out["token"])
    if not m:
        out["error"] = "the join command has no bootstrap token of the form [a-z0-9]{6}.[a-z0-9]{16}"
    elif not out["endpoint"]:
        out["error"] = "the join command names no API server endpoint"
    elif not out["ca_cert_hashes"] or not all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in out["ca_cert_hashes"]):
        out["error"] = "the join command has no --discovery-token-ca-cert-hash sha256:<64 hex digits>"
    else:
        out["token_id"] = m.group(1)
    return _unsafe(out)


def k8s_join_config(command, api, cri_socket=""):
    """The JoinConfiguration document (a dict) for a worker: token discovery
    with the CA pins, and nodeRegistration.criSocket only when the node has
    several CRI endpoints (k8s_join_decide chose the cluster's); otherwise
    kubeadm's defaults (the hostname as node name, the runtime it
    detects)."""
    doc = {
        "apiVersion": api,
        "kind": "JoinConfiguration",
        "discovery": {
            "bootstrapToken": {
                "apiServerEndpoint": command["endpoint"],
                "token": command["token"],
                "caCertHashes": list(command["ca_cert_hashes"]),
            }
        },
    }
    if cri_socket:
        doc["nodeRegistration"] = {"criSocket": cri_socket}
    return doc


def k8s_join_waiting(cluster, names, addresses=None):
    """The hosts of names that no Node object stands for yet (by name or
    InternalIP)."""
    if isinstance(cluster, str):
        cluster = json.loads(cluster or "{}")
    items = (cluster or {}).get("items") or []
    addresses = addresses or {}
    return [n for n in names if not _nodes_of(n, addresses.get(n, ""), items)]


def k8s_join_succeeded(names, rcs):
    """The names whose kubeadm join exited 0 (rcs: their exit codes, in
    the same order)."""
    return [n for n, rc in zip(names, rcs) if rc == 0]


class FilterModule(object):
    """The k8s_join role's filters."""

    def filters(self):
        return {
            "k8s_join_decide": k8s_join_decide,
            "kubeadm_join_command": kubeadm_join_command,
            "k8s_join_config": k8s_join_config,
            "k8s_join_waiting": k8s_join_waiting,
            "k8s_join_mask": mask_tokens,
            "k8s_join_succeeded": k8s_join_succeeded,
        }
