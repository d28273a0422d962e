# -*- coding: utf-8 -*-
"""Filters of the external_lb role for a script of heatsible's interface
(tasks/heatsible.yml; docs/external-lb.md). Unit-tested in
tests/unit/plugins/filter/test_external_lb.py.

A mutating command of the script (install, add-route, remove-route) prints
what it did, then, as its last line, "changed" or "unchanged".

external_lb_broken(results)
    "ARGS -> LAST LINE" of each command that ran and did not end so.
external_lb_said(results)
    the lines before that last one of every command that changed something.
"""

VERDICTS = ("changed", "unchanged")


def _unsafe(value):
    # The script's output comes from the load balancer: never template it.
    try:
        from ansible.utils.unsafe_proxy import wrap_var
    except ImportError:  # the unit tests run without Ansible
        return value
    return wrap_var(value)


def _lines(result):
    lines = result.get("stdout_lines")
    if lines is None:
        lines = str(result.get("stdout", "")).splitlines()
    return list(lines)


def external_lb_broken(results):
    """For each registered command result in results that ran (has an rc:
    a skipped one has none) and whose last stdout line is neither "changed"
    nor "unchanged": its arguments after the script (cmd[1:]) and that line
    ("(no output)" when there is none)."""
    out = []
    for r in results or []:
        if not isinstance(r, dict) or "rc" not in r:
            continue
        lines = _lines(r)
        last = lines[-1] if lines else ""
        if last in VERDICTS:
            continue
        out.append("%s -> %s" % (" ".join(str(a) for a in (r.get("cmd") or [])[1:]), last if lines else "(no output)"))
    return _unsafe(out)


def external_lb_said(results):
    """What the commands that changed something printed, without their
    verdict line, in order."""
    out = []
    for r in results or []:
        if isinstance(r, dict) and r.get("changed"):
            out.extend(_lines(r)[:-1])
    return _unsafe(out)


class FilterModule(object):
    """The external_lb role's filters for heatsible's script interface."""

    def filters(self):
        return {
            "external_lb_broken": external_lb_broken,
            "external_lb_said": external_lb_said,
        }
