# -*- coding: utf-8 -*-
"""Filters of the external_lb role for a script of Tacker's contract.

Tacker's install_external_lb.sh writes haproxy.cfg once; afterwards the
server lines of its "backend kubernetes-nodeport" are kept by heatsible
(as Tacker's driver does with sed, without its bugs):

haproxy_backend_servers(text, backend, present, absent)
    edits the text of haproxy.cfg: only whole "server NAME ADDRESS ..."
    lines inside that one backend section, matched by their whole server
    name (worker1 never matches worker12); every other byte stays as it
    was (comments, blank lines, other sections, the masters' lines).
tacker_script_env(proxy_env, env)
    the environment Tacker gives the script.
haproxy_alerts(result)
    what of `haproxy -c`'s output a refusal quotes.
"""

import ipaddress
import re

# Keywords that open a section of haproxy's configuration (haproxy 2.x and
# 3.x); anything else is a line of the current section.
SECTIONS = frozenset((
    "global", "defaults", "frontend", "backend", "listen", "userlist",
    "peers", "mailers", "resolvers", "program", "http-errors", "ring",
    "cache", "log-forward", "fcgi-app", "crt-store", "traces", "acme",
))

# A server name as haproxy accepts it (letters, digits, - _ . :).
SERVER_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

# Tacker's format of a line, kept for the lines heatsible adds: 4 spaces,
# "server", 2 spaces, name, address (no port), "check".
LINE = "    server  %s %s check"


def _unsafe(value):
    # haproxy.cfg comes from the VM: never template its text again.
    try:
        from ansible.utils.unsafe_proxy import wrap_var
    except ImportError:  # the unit tests run without Ansible
        return value
    return wrap_var(value)


def _tokens(line):
    """The words of a configuration line, up to a comment."""
    out = []
    for word in line.split():
        if word.startswith("#"):
            break
        out.append(word)
    return out


def _host(address):
    """The host part of a server address: 10.0.0.21 of 10.0.0.21:30080,
    ipv4@10.0.0.21 or [fd00::1]:80."""
    a = address.split("@", 1)[1] if "@" in address else address
    if a.startswith("["):
        return a[1:a.index("]")] if "]" in a else a
    if a.count(":") == 1:
        return a.split(":", 1)[0]
    return a


def _with_host(address, host):
    """address with its host part replaced (prefix and port kept)."""
    prefix = ""
    a = address
    if "@" in a:
        prefix, a = a.split("@", 1)
        prefix += "@"
    if a.count(":") == 1 and not a.startswith("["):
        return prefix + host + ":" + a.split(":", 1)[1]
    return prefix + host


def _check_servers(items, what, key):
    """Normalise present/absent: a list of {KEY, address} (address only for
    present) into [{name, address}]. Returns (list, error)."""
    out = []
    seen = {}
    for item in items or []:
        if not isinstance(item, dict):
            return None, "%s: %r is not a mapping with %s and address" % (what, item, key)
        name = str(item.get(key, ""))
        if not SERVER_NAME.match(name):
            return None, "%s: %r is not a haproxy server name" % (what, name)
        address = str(item.get("address", ""))
        if what == "present":
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:
                return None, "%s: server %s has the address %r, not an IP address" % (what, name, address)
            if ip.version != 4:
                return None, "%s: server %s has the address %s; Tacker's server lines take IPv4 addresses" % (what, name, address)
            address = str(ip)
        if name in seen:
            if what == "present" and seen[name] != address:
                return None, "present: server %s is given twice, as %s and %s" % (name, seen[name], address)
            continue
        seen[name] = address
        out.append({"name": name, "address": address})
    return out, ""


def haproxy_backend_servers(text, backend="kubernetes-nodeport", present=None, absent=None, name_key="name"):
    """Put the servers of present into backend (one line each), take those
    named in absent out of it.

    text: haproxy.cfg; present: [{name, address}]; absent: [{name}] or
    names (name_key: the key that holds the server name, e.g. "server" for
    the role's routes). A present server whose line is there with that address (port and
    options aside) is left as it is; with another address, only the address
    in its line changes; missing, a line in Tacker's format is added after
    the last server line of the backend. Duplicate lines of a name heatsible
    edits go; an absent name loses every line.

    Returns {found, sections, error, changed, content, servers, added,
    removed, updated}: found says whether the backend is there exactly once
    (sections: how many times it is; error says what is wrong otherwise); content is the new text (text when unchanged);
    servers the backend's [{name, address}] afterwards; added, removed and
    updated the server names by what happened to them.
    """
    out = {"found": False, "sections": 0, "error": "", "changed": False, "content": text,
           "servers": [], "added": [], "removed": [], "updated": []}
    if text is None:
        text = ""
    present, err = _check_servers(present, "present", name_key)
    if err:
        out["error"] = err
        return _unsafe(out)
    absent = [a if isinstance(a, dict) else {name_key: a} for a in (absent or [])]
    absent, err = _check_servers(absent, "absent", name_key)
    if err:
        out["error"] = err
        return _unsafe(out)
    both = sorted(set(s["name"] for s in present) & set(s["name"] for s in absent))
    if both:
        out["error"] = "server %s is both to add and to remove" % ", ".join(both)
        return _unsafe(out)

    lines = text.split("\n")
    # Find the backend's section: [start, end) line indexes.
    starts = []
    end = None
    for i, line in enumerate(lines):
        words = _tokens(line)
        if not words or words[0] not in SECTIONS:
            continue
        if starts and end is None:
            end = i
        if words[0] == "backend" and len(words) > 1 and words[1] == backend:
            starts.append(i)
            end = None
    out["sections"] = len(starts)
    if not starts:
        out["error"] = "haproxy.cfg has no \"backend %s\" section" % backend
        return _unsafe(out)
    if len(starts) > 1:
        out["error"] = (
            "haproxy.cfg has %d \"backend %s\" sections (lines %s): the script ran more "
            "than once? Merge them by hand; heatsible edits one"
            % (len(starts), backend, ", ".join(str(s + 1) for s in starts)))
        return _unsafe(out)
    out["found"] = True
    start = starts[0]
    if end is None:
        end = len(lines)

    want = dict((s["name"], s["address"]) for s in present)
    gone = set(s["name"] for s in absent)
    kept = set()
    new = lines[:start + 1]
    last_server = None  # index in new of the last server line
    last_content = start  # of the last line that is neither blank nor comment
    for line in lines[start + 1:end]:
        words = _tokens(line)
        if len(words) >= 3 and words[0] == "server":
            name, address = words[1], words[2]
            if name in gone:
                out["removed"].append(name)
                continue
            if name in want:
                if name in kept:  # a duplicate line
                    out["removed"].append(name)
                    continue
                kept.add(name)
                if _host(address) != want[name]:
                    # Replace the address word only: indentation, port and
                    # options stay.
                    m = re.match(r"^(\s*server\s+%s\s+)(\S+)(.*)$" % re.escape(name), line)
                    line = m.group(1) + _with_host(address, want[name]) + m.group(3)
                    out["updated"].append(name)
            new.append(line)
            last_server = len(new) - 1
            last_content = last_server
            continue
        new.append(line)
        if words:
            last_content = len(new) - 1
    add = [LINE % (s["name"], s["address"]) for s in present if s["name"] not in kept]
    out["added"] = [s["name"] for s in present if s["name"] not in kept]
    at = (last_server if last_server is not None else last_content) + 1
    new[at:at] = add
    new.extend(lines[end:])
    content = "\n".join(new)
    out["removed"] = sorted(set(out["removed"]))
    out["changed"] = content != text
    out["content"] = content
    # The servers of the backend afterwards.
    section_end = len(new) - (len(lines) - end)
    for line in new[start + 1:section_end]:
        words = _tokens(line)
        if len(words) >= 3 and words[0] == "server":
            out["servers"].append({"name": words[1], "address": words[2]})
    return _unsafe(out)


def tacker_script_env(proxy_env=None, env=None):
    """The environment of a Tacker-contract script: env, plus http_proxy and
    https_proxy when the request gives both (Tacker exports them only then)."""
    out = dict(env or {})
    p = proxy_env or {}
    if p.get("http_proxy") and p.get("https_proxy"):
        out["http_proxy"] = p["http_proxy"]
        out["https_proxy"] = p["https_proxy"]
    return out


def haproxy_alerts(result):
    """The lines of a `haproxy -c -f FILE` result (registered: stdout and
    stderr) that say why haproxy refuses the file: its ALERT lines (the
    first two and the last, its verdict, when there are more than three:
    haproxy prints one per refused server), else the lines that mention an
    error, else stderr as it is."""
    result = result or {}
    lines = list(result.get("stdout_lines") or []) + list(result.get("stderr_lines") or [])
    alerts = [line for line in lines if "ALERT" in line]
    if len(alerts) > 3:
        return _unsafe(alerts[:2] + alerts[-1:])
    out = [line for line in lines if re.search("ALERT|rror", line)]
    return _unsafe(out or [result.get("stderr", "")])


class FilterModule(object):
    def filters(self):
        return {
            "haproxy_backend_servers": haproxy_backend_servers,
            "tacker_script_env": tacker_script_env,
            "haproxy_alerts": haproxy_alerts,
        }
