# -*- coding: utf-8 -*-
"""k8s_node_pick: which Node objects are the nodes k8s_node acts on.

heatsible names a node after its inventory host; the cluster may not: Tacker's
kubeadm scripts register "worker<last octet>" / "master<last octet>" (the
hostname they set), kubeadm joins under the VM's hostname. So a node is found
by its name or by its internal address (a Node's status.addresses of type
InternalIP). A node that matches two different Node objects (one by name,
another by address, or two by address) is not guessed at: the role refuses.
"""

import json


def _internal_ips(node):
    return [
        a.get("address")
        for a in (node.get("status") or {}).get("addresses") or []
        if a.get("type") == "InternalIP" and a.get("address")
    ]


def _unsafe(value):
    try:
        from ansible.utils.unsafe_proxy import wrap_var
    except ImportError:  # the unit tests run without Ansible
        return value
    return wrap_var(value)


def k8s_node_pick(nodes, names, addresses=None):
    """Match names (inventory names) against the Nodes of nodes (kubectl get
    nodes -o json: its stdout, or the parsed object).

    addresses maps a name to its internal address (a string or a list).
    Returns {"found": [{"name", "node", "by", "address", "cordoned"}],
    "nodes": [Node names to act on, each once], "missing": [names],
    "ambiguous": [messages]}."""
    if isinstance(nodes, str):
        nodes = json.loads(nodes)
    items = (nodes or {}).get("items") or []
    addresses = addresses or {}
    out = {"found": [], "nodes": [], "missing": [], "ambiguous": []}
    for name in names:
        want = addresses.get(name) or []
        if isinstance(want, str):
            want = [want]
        hits = []  # (node, by, address)
        for n in items:
            meta = n.get("metadata") or {}
            nn = meta.get("name")
            if nn == name:
                hits.append((n, "name", ""))
                continue
            for ip in _internal_ips(n):
                if ip in want:
                    hits.append((n, "address", ip))
                    break
        if not hits:
            out["missing"].append(name)
            continue
        if len(hits) > 1:
            how = " and ".join(
                "Node %s %s" % (n["metadata"]["name"], "by name" if by == "name" else "by its InternalIP %s" % ip)
                for n, by, ip in hits
            )
            out["ambiguous"].append(
                "%s matches %s: more than one Node object stands for this host; delete the stale one "
                "(kubectl delete node NAME) and run again" % (name, how)
            )
            continue
        n, by, ip = hits[0]
        nn = n["metadata"]["name"]
        out["found"].append({
            "name": name,
            "node": nn,
            "by": by,
            "address": ip,
            "cordoned": bool((n.get("spec") or {}).get("unschedulable")),
        })
        if nn not in out["nodes"]:
            out["nodes"].append(nn)
    return _unsafe(out)


class FilterModule(object):
    """The k8s_node role's filters."""

    def filters(self):
        return {"k8s_node_pick": k8s_node_pick}
