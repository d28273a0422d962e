# -*- coding: utf-8 -*-
"""apt_wait_report: judge files/wait.py's report, and say it in one line.

The same filter reads the probe (is anything in apt's way?) and the wait's
result (did it clear in time?), so the progress lines of both read alike:

  worker-1: waiting for the dpkg lock /var/lib/dpkg/lock-frontend (held by
  pid 1234, apt-get), at most 600 s
  worker-1: waited 118 s for the dpkg lock /var/lib/dpkg/lock-frontend
  (pid 1234, apt-get); apt can run
"""

import json

LOCK_NAMES = {
    "/var/lib/dpkg/lock-frontend": "the dpkg lock",
    "/var/lib/dpkg/lock": "dpkg's database lock",
    "/var/lib/apt/lists/lock": "apt's package list lock",
}


def _lock(lk, held_by="held by "):
    name = LOCK_NAMES.get(lk.get("path"), "the lock")
    return "%s %s (%spid %s, %s)" % (name, lk.get("path"), held_by, lk.get("pid"), lk.get("holder") or "?")


def _parse(result):
    if not isinstance(result, dict):
        return None, "no result"
    if result.get("rc", 0) != 0:
        err = (result.get("stderr") or result.get("msg") or "").strip()
        return None, "exit %s: %s" % (result.get("rc"), err[-500:] or "no output")
    try:
        return json.loads(result.get("stdout", "")), ""
    except ValueError:
        return None, "no report: %s" % (result.get("stdout", "").strip()[-500:] or "no output")


def apt_wait_report(result, host, timeout, check_mode=False):
    """{"busy", "failed", "msg"} for a probe's or a wait's registered result.

    A probe is busy when cloud-init runs or a lock is held (the wait then
    runs); a wait failed when its time ran out. A probe or wait that did
    not report fails with what it printed.
    """
    rep, err = _parse(result)
    if rep is None:
        return {"busy": False, "failed": True,
                "msg": "%s: could not tell whether cloud-init or apt is busy (%s). Nothing was installed." % (host, err)}
    ci = rep.get("cloud_init") or {}
    locks = rep.get("locks") or []
    if "waited" not in rep:  # the probe
        what = []
        if ci.get("status") == "running":
            what.append("cloud-init to finish (cloud-init status: running)")
        what.extend(_lock(lk) for lk in locks)
        if not what:
            return {"busy": False, "failed": False, "msg": "%s: nothing holds apt" % host}
        verb = "would wait" if check_mode else "waiting"
        return {"busy": True, "failed": False,
                "msg": "%s: %s for %s, at most %s s" % (host, verb, ", then ".join(what), timeout)}
    waited = rep.get("waited", 0)
    out = rep.get("timed_out") or ""
    if out == "cloud-init":
        return {"busy": True, "failed": True,
                "msg": ("%s: cloud-init was still running after %s s (cloud-init status --wait did not return). "
                        "Nothing was installed. See cloud-init status --long and /var/log/cloud-init-output.log "
                        "on the host; re-run when it is done." % (host, waited))}
    if out:
        return {"busy": True, "failed": True,
                "msg": ("%s: %s still held after %s s. Nothing was installed. See what it does "
                        "(ps -fp %s; unattended-upgrades can take a while), then re-run."
                        % (host, "; ".join(_lock(lk) for lk in locks), waited,
                           " ".join(str(lk.get("pid")) for lk in locks if (lk.get("pid") or 0) > 0) or "PID"))}
    what = []
    if ci.get("waited"):
        what.append("cloud-init (%s s, status: %s)" % (ci["waited"], ci.get("status") or "?"))
    what.extend(_lock(lk, "") for lk in rep.get("waited_for") or [])
    return {"busy": True, "failed": False,
            "msg": "%s: waited %s s for %s; apt can run" % (host, waited, " and ".join(what) or "nothing")}


class FilterModule(object):
    """The apt_wait role's filters."""

    def filters(self):
        return {"apt_wait_report": apt_wait_report}
