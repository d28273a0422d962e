# -*- coding: utf-8 -*-
"""apt_wait_report: judge files/wait.py's report, and say it in one line.

The same filter reads the probe (is anything in apt's way?) and the wait's
result (did it clear in time?), so the progress lines of both read alike:

  worker-1: waiting for the dpkg lock /var/lib/dpkg/lock-frontend (held by
  pid 1234, apt-get), at most 600 s
  worker-1: waited 118 s for the dpkg lock /var/lib/dpkg/lock-frontend
  (pid 1234, apt-get); apt can run

apt_update_report judges files/update.py's apt-get update (tasks/update.yml):
the sources it could not fetch from, left out as apt-get leaves them out:

  worker-1: apt-get update could not fetch from 1 source(s), left out as
  apt-get leaves them out: http://apt.kubernetes.io kubernetes-xenial Release
  (404 Not Found [IP: 10.0.0.1 80]); installing from the sources that
  answered (1 s)
"""

import json
import re

LOCK_NAMES = {
    "/var/lib/dpkg/lock-frontend": "the dpkg lock",
    "/var/lib/dpkg/lock": "dpkg's database lock",
    "/var/lib/apt/lists/lock": "apt's package list lock",
}


def _lock(lk, held_by="held by "):
    name = LOCK_NAMES.get(lk.get("path"), "the lock")
    return "%s %s (%spid %s, %s)" % (name, lk.get("path"), held_by, lk.get("pid"), lk.get("holder") or "?")


def _bound(knob, timeout):
    return "The wait is bounded by %s s: re-run with --wait %s=SECONDS for a longer one." % (timeout, knob)


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


def apt_wait_report(result, host, timeout, check_mode=False, after="apt can run", unchanged="Nothing was installed.",
                    knob="apt"):
    """{"busy", "failed", "msg"} for a probe's or a wait's registered result.

    A probe is busy when cloud-init runs or a lock is held (the wait then
    runs); a wait failed when its time ran out, and says which of heatsible
    run's --wait bounds (knob) it is. A probe or wait that did not report fails with what it
    printed. after: what can happen once the wait is over; unchanged: what
    did not happen when it fails (k8s_join, which waits before it looks for
    kubeadm, says its own).
    """
    rep, err = _parse(result)
    if rep is None:
        return {"busy": False, "failed": True,
                "msg": "%s: could not tell whether cloud-init or apt is busy (%s). %s" % (host, err, unchanged)}
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
                        "%s See cloud-init status --long and /var/log/cloud-init-output.log "
                        "on the host; re-run when it is done. %s" % (host, waited, unchanged, _bound(knob, timeout)))}
    if out:
        return {"busy": True, "failed": True,
                "msg": ("%s: %s still held after %s s. %s See what it does "
                        "(ps -fp %s; unattended-upgrades can take a while), then re-run. %s"
                        % (host, "; ".join(_lock(lk) for lk in locks), waited, unchanged,
                           " ".join(str(lk.get("pid")) for lk in locks if (lk.get("pid") or 0) > 0) or "PID",
                           _bound(knob, timeout)))}
    what = []
    if ci.get("waited"):
        what.append("cloud-init (%s s, status: %s)" % (ci["waited"], ci.get("status") or "?"))
    what.extend(_lock(lk, "") for lk in rep.get("waited_for") or [])
    return {"busy": True, "failed": False,
            "msg": "%s: waited %s s for %s; %s" % (host, waited, " and ".join(what) or "nothing", after)}


# A user:password in a source's URL (apt masks it in most messages, not in all).
_CREDS = re.compile(r"//[^/@\s]+@")


def _source(words):
    """"URL SUITE" of an apt-get update line's "URL SUITE[/COMPONENT] ...", the source's identity."""
    return " ".join([words[0], words[1].split("/")[0]] if len(words) > 1 else words[:1])


def apt_update_parse(output):
    """(failed, answered) from apt-get update's output (LC_ALL=C).

    failed: [(source, what, reason)] in the order apt printed them, one per
    source ("URL SUITE"): what is the file apt could not get ("URL SUITE
    Release"), reason apt's own words ("404  Not Found [IP: ...]",
    whitespace collapsed). From "Err:N URL SUITE FILE" and its indented
    reason, "W: GPG error: URL SUITE FILE: reason" and "E: The repository
    'URL SUITE FILE' is not signed." (and the like).
    answered: the sources ("URL SUITE") with a "Hit:" or "Get:" line that
    did not fail.
    """
    failed, answered = [], []
    seen = set()

    def add(words, reason):
        src = _source(words)
        if src not in seen:
            seen.add(src)
            failed.append((src, " ".join(words), " ".join(reason.split())))

    lines = (output or "").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        head, _, rest = line.partition(" ")
        if head.startswith("Err:"):
            reason = []
            while i < len(lines) and lines[i][:1] in (" ", "\t"):
                reason.append(lines[i])
                i += 1
            add(rest.split(), " ".join(reason))
        elif head.startswith(("Hit:", "Get:")):
            words = rest.split()
            if len(words) > 1:
                src = _source(words)
                if src not in answered:
                    answered.append(src)
        elif line.startswith("W: GPG error: "):
            what, _, reason = line[len("W: GPG error: "):].partition(": ")
            add(what.split(), reason)
        elif line.startswith("E: The repository '"):
            what, _, reason = line[len("E: The repository '"):].partition("' ")
            add(what.split(), reason.rstrip("."))
    return failed, [a for a in answered if a not in seen]


def apt_update_report(result, host, timeout):
    """{"ran", "failed", "warn", "all_failed", "sources", "msg", "hint"} for update.py's result.

    apt-get update leaves out the sources that do not answer and reads the
    others: so does heatsible. warn: some source failed, or the update ran
    out of time; the install goes on with the lists there are. failed:
    apt-get update itself failed (no source named, e.g. a held lock or a
    broken sources.list): nothing is installed. hint: what to add to an
    install's failure (the sources that failed), "" when none did.
    """
    rep, err = _parse(result)
    none = {"ran": False, "failed": False, "warn": False, "all_failed": False, "sources": [], "msg": "", "hint": ""}
    if rep is None:
        return dict(none, failed=True, msg="%s: could not refresh apt's package lists (%s). Nothing was installed." % (host, err))
    if rep.get("fresh"):
        return dict(none, msg="%s: apt's package lists are %s s old: not refreshed" % (host, rep.get("age")))
    output = _CREDS.sub("//********@", rep.get("output") or "")
    failed, answered = apt_update_parse(output)
    sources = ["%s (%s)" % (what, reason) if reason else what for _, what, reason in failed]
    took = rep.get("took", 0)
    out = dict(none, ran=True, sources=sources, all_failed=bool(failed) and not answered)
    if failed:
        out["hint"] = ("apt-get update could not fetch from %s%s: %s. Fix or remove %s (a retired repository such as "
                       "apt.kubernetes.io in /etc/apt/sources.list.d, a mirror the cloud cannot reach), or give the "
                       "request a proxy that reaches %s, then re-run."
                       % ("any of its %d source(s)" % len(failed) if out["all_failed"] else "%d source(s)" % len(failed),
                          ", so no package list was refreshed" if out["all_failed"] else "",
                          "; ".join(sources), "them" if len(failed) > 1 else "it", "them" if len(failed) > 1 else "it"))
    if rep.get("timed_out"):
        out["warn"] = True
        out["msg"] = ("%s: apt-get update did not finish within %s s and was stopped%s; installing from the "
                      "package lists there are (%s s)"
                      % (host, timeout, "; it could not fetch from: " + "; ".join(sources) if sources else "", took))
        return out
    if failed:
        out["warn"] = True
        if out["all_failed"]:
            out["msg"] = ("%s: apt-get update could not fetch from any of its %d source(s): %s; installing from "
                          "the package lists already on the host (%s s)" % (host, len(failed), "; ".join(sources), took))
        else:
            out["msg"] = ("%s: apt-get update could not fetch from %d source(s), left out as apt-get leaves them out: "
                          "%s; installing from the sources that answered (%s s)" % (host, len(failed), "; ".join(sources), took))
        return out
    if rep.get("rc") != 0:
        tail = [l for l in output.splitlines() if l.strip()][-5:]
        out["failed"] = True
        out["msg"] = ("%s: apt-get update failed (exit %s) without naming a source that failed: %s. Nothing was "
                      "installed." % (host, rep.get("rc"), " / ".join(tail) or "no output"))
        return out
    out["msg"] = "%s: apt-get update refreshed the package lists of %d source(s) (%s s)" % (host, len(answered), took)
    return out


class FilterModule(object):
    """The apt_wait role's filters."""

    def filters(self):
        return {"apt_wait_report": apt_wait_report, "apt_update_report": apt_update_report}
