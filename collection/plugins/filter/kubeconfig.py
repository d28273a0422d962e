# -*- coding: utf-8 -*-
"""kubeconfig_choice: which admin kubeconfig kubectl uses on the first master.

files/find.sh reports, for each candidate path in order, whether the SSH
user can read it ("user"), only root can ("root"), or it is not usable
(missing, not-a-file, unreadable). The first usable one wins; kubectl then
runs as the SSH user when it can read the file, else as root (become).
An explicit setting (kubectl_kubeconfig) is the only candidate: a setting
that does not work is an error, never a reason to take another file.
"""

import json

# Where heatsible's users give the setting (named in the error messages).
SETTING = (
    "additionalParams.k8s_cluster_installation_param.master_node.kubeconfig "
    "in the request, or heatsible run --kubeconfig PATH"
)

STATES = {
    "missing": "missing",
    "not-a-file": "not a file",
    "unreadable": "not readable, not even by root",
    "user": "readable by the SSH user",
    "root": "readable by root only",
}


def _unsafe(value):
    # The path may come from the request: never template it again.
    if value.get("error"):
        value["msg"] = value["error"]
    try:
        from ansible.utils.unsafe_proxy import wrap_var
    except ImportError:  # the unit tests run without Ansible
        return value
    return wrap_var(value)


def kubeconfig_choice(probe, setting="", host="the first master"):
    """Decide from find.sh's output (a registered raw result or its stdout).

    Returns {"path", "become", "kubectl" (argv list), "error", "msg"}; error
    is "" when a kubeconfig was found, else the message to fail with; msg
    says what was found (or the error), for the progress line.
    """
    stdout = probe.get("stdout", "") if isinstance(probe, dict) else probe
    out = {"path": "", "become": False, "kubectl": [], "error": "", "msg": ""}
    try:
        found = json.loads(stdout)
        paths = found["paths"]
        kubectl = found.get("kubectl") or ""
    except (ValueError, KeyError, TypeError):
        err = (probe.get("stderr", "") if isinstance(probe, dict) else "").strip()
        out["error"] = (
            "could not look for the admin kubeconfig on %s: the probe printed no "
            "report (%s). Nothing was changed." % (host, err or stdout.strip() or "no output")
        )
        return _unsafe(out)
    tried = ", ".join(
        "%s (%s)" % (p["path"], STATES.get(p.get("state"), p.get("state"))) for p in paths
    )
    usable = [p for p in paths if p.get("state") in ("user", "root")]
    if setting:
        if not usable:
            out["error"] = (
                "the admin kubeconfig %s given for kubectl is not usable on %s: %s. "
                "Nothing was changed. Fix the file or the setting (%s)."
                % (setting, host, tried, SETTING)
            )
            return _unsafe(out)
    elif not usable:
        out["error"] = (
            "no admin kubeconfig for kubectl on %s: tried %s. Nothing was changed. "
            "kubespray leaves it in /etc/kubernetes/admin.conf and /root/.kube/config "
            "(read through sudo), kubeadm scripts copy it to the SSH user's "
            "~/.kube/config; give its path on the first master with %s."
            % (host, tried, SETTING)
        )
        return _unsafe(out)
    if not kubectl:
        out["error"] = (
            "kubectl is not installed on %s (not in root's PATH). Nothing was changed."
            % host
        )
        return _unsafe(out)
    pick = usable[0]
    out["path"] = pick["path"]
    out["become"] = pick["state"] == "root"
    out["kubectl"] = [kubectl, "--kubeconfig", pick["path"]]
    out["msg"] = "%s: kubectl reads %s %s" % (
        host, pick["path"], "through sudo (root only)" if out["become"] else "as %s" % (found.get("user") or "the SSH user"))
    return _unsafe(out)


class FilterModule(object):
    """The kubeconfig role's filters."""

    def filters(self):
        return {"kubeconfig_choice": kubeconfig_choice}
