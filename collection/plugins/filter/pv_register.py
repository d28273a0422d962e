# -*- coding: utf-8 -*-
"""Filters of the pv_register role (run on the controller; unit-tested in
tests/unit/plugins/filter/test_pv_register.py).

pv_register_targets(pvs, names, servers, label_selector)
    which PersistentVolumes of `kubectl get persistentvolumes -o json`
    heal-start unregisters: NFS PVs of this storage server, registered by
    heatsible (its label) or named in pv_manifests.
pv_register_guard(targets, delete_released)
    the ones that block the unregistering (Bound; Released unless the
    operator acknowledged them) and the refusal's message.
pv_register_report(result, names)
    what files/pv.sh printed (keyed lines: "server URL", "apply LINE",
    "phase NAME PHASE"), parsed by key, and whether every PV is Available
    or Bound.
pv_register_poll(result, names)
    the same judgement on `kubectl get persistentvolumes NAME... -o json`
    (present-stdin.yml's poll).
pv_register_stream(contents)
    the manifests as one YAML stream for kubectl apply -f -.
"""

import json

# Phases a registered PV may be in after apply: Available, or Bound on a
# re-run. Failed ends the wait (it will not change by itself) but fails.
READY = ("Available", "Bound")
FINAL = READY + ("Failed",)


def _unsafe(value):
    # PV names, claims and kubectl's messages come from the cluster: never
    # template them again.
    try:
        from ansible.utils.unsafe_proxy import wrap_var
    except ImportError:  # the unit tests run without Ansible
        return value
    return wrap_var(value)


def _items(pvs):
    """The PV objects of kubectl's JSON (text, parsed, or a registered
    result): a List's items, or the one object kubectl prints for one name."""
    if isinstance(pvs, dict) and "stdout" in pvs:
        pvs = pvs["stdout"]
    if isinstance(pvs, str):
        pvs = json.loads(pvs or "{}")
    pvs = pvs or {}
    if "items" in pvs:
        return pvs["items"] or []
    return [pvs] if "metadata" in pvs else []


def pv_register_targets(pvs, names=None, servers=None, label_selector="app.kubernetes.io/managed-by=heatsible"):
    """[{name, phase, claim}] of the PVs in pvs (a kubectl List, as JSON text
    or parsed) that are NFS PVs (spec.nfs) of one of servers (any server
    when servers is empty) and are named in names or carry label_selector
    (KEY=VALUE). A CSI PV or an NFS PV of another server is never one."""
    names = set(names or [])
    servers = list(servers or [])
    key, _, value = str(label_selector).partition("=")
    out = []
    for pv in _items(pvs):
        meta = pv.get("metadata") or {}
        spec = pv.get("spec") or {}
        nfs = spec.get("nfs") or {}
        if "server" not in nfs:
            continue
        if servers and nfs["server"] not in servers:
            continue
        labels = meta.get("labels") or {}
        if meta.get("name") not in names and labels.get(key) != value:
            continue
        ref = spec.get("claimRef") or {}
        claim = "%s/%s" % (ref.get("namespace", ""), ref["name"]) if "name" in ref else ""
        out.append({"name": meta.get("name", ""),
                    "phase": (pv.get("status") or {}).get("phase", "Unknown"),
                    "claim": claim})
    return _unsafe(out)


def pv_register_guard(targets, delete_released=False):
    """{blocking, msg}: the targets that block unregistering (Bound ones
    always; Released ones unless delete_released) and the refusal's message
    ("" when none blocks)."""
    phases = ("Bound",) if _bool(delete_released) else ("Bound", "Released")
    blocking = [t for t in targets or [] if t.get("phase") in phases]
    if not blocking:
        return _unsafe({"blocking": [], "msg": ""})
    which = "; ".join("%s is %s %s claim %s" % (t["name"], t["phase"], "to" if t["phase"] == "Bound" else "from", t["claim"])
                      for t in blocking)
    parts = ["refusing to unregister the PersistentVolumes, nothing was deleted: %s." % which]
    if any(t["phase"] == "Bound" for t in blocking):
        parts.append("Delete the Bound claims (stop their workloads) first.")
    if any(t["phase"] == "Released" for t in blocking):
        parts.append("A Released PV still holds its former claim's data (it stays on the export either way): "
                     "decide whether a new claim may get it, then re-run with --delete-released, "
                     "or delete the PV yourself.")
    return _unsafe({"blocking": blocking, "msg": " ".join(parts)})


def _bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _lines(result):
    if isinstance(result, dict):
        result = result.get("stdout", "")
    return str(result or "").splitlines()


def _judge(phases, names):
    """missing: names without a phase; not_ready: "NAME PHASE" of those not
    Available or Bound."""
    missing = [n for n in names if n not in phases]
    not_ready = ["%s %s" % (n, phases[n]) for n in names if n in phases and phases[n] not in READY]
    return missing, not_ready


def pv_register_report(result, names=None):
    """files/pv.sh's output (a registered result or its stdout), parsed by
    key: {server, applied (kubectl apply's lines), phases ([name, phase] in
    the order printed), changed (apply created or configured something),
    missing, not_ready, ready}. A line with another key is ignored, never
    read as a field of another."""
    names = list(names or [])
    out = {"server": "", "applied": [], "phases": [], "changed": False}
    seen = {}
    for line in _lines(result):
        key, _, rest = line.partition(" ")
        if key == "server":
            out["server"] = rest.strip()
        elif key == "apply" and rest.strip():
            out["applied"].append(rest.strip())
            words = rest.split()
            if len(words) >= 2 and words[1] in ("created", "configured"):
                out["changed"] = True
        elif key == "phase":
            words = rest.split()
            if len(words) == 2:
                out["phases"].append(words)
                seen[words[0]] = words[1]
    out["missing"], out["not_ready"] = _judge(seen, names)
    out["ready"] = not out["missing"] and not out["not_ready"]
    return _unsafe(out)


def pv_register_poll(result, names=None):
    """`kubectl get persistentvolumes NAME... -o json` (a registered result
    or its stdout): {phases ([name, phase] for each of names found),
    settled (every one found is in a phase that does not change by itself:
    stop polling), missing, not_ready, ready}."""
    names = list(names or [])
    text = result.get("stdout", "") if isinstance(result, dict) else result
    try:
        items = _items(text)
    except ValueError:
        items = []
    found = {}
    for pv in items:
        name = (pv.get("metadata") or {}).get("name", "")
        found[name] = (pv.get("status") or {}).get("phase", "Unknown")
    phases = [[n, found[n]] for n in names if n in found]
    missing, not_ready = _judge(found, names)
    rc_ok = not isinstance(result, dict) or result.get("rc", 0) == 0
    return _unsafe({
        "phases": phases,
        "settled": rc_ok and not missing and all(p in FINAL for _, p in phases),
        "missing": missing,
        "not_ready": not_ready,
        "ready": rc_ok and not missing and not not_ready,
    })


def pv_register_stream(contents):
    """The manifests' texts (as lookup('file') reads them) as one YAML
    stream: "---" before each document, a line break after it. Still
    literal: Ansible must never template what a manifest holds."""
    return _unsafe("".join("---\n%s\n" % c for c in contents or []))


class FilterModule(object):
    """The pv_register role's filters."""

    def filters(self):
        return {
            "pv_register_targets": pv_register_targets,
            "pv_register_guard": pv_register_guard,
            "pv_register_report": pv_register_report,
            "pv_register_poll": pv_register_poll,
            "pv_register_stream": pv_register_stream,
        }
