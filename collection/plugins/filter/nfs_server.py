# -*- coding: utf-8 -*-
"""nfs_server's judgement that needs code, on the controller (tests: tests/unit/plugins/filter/).

- nfs_server_table: the exports, one entry per directory with its clients,
  the volume mount point it lives on and a stable ganesha Export_Id;
- nfs_server_nfs_conf_overrides: the settings of /etc/nfs.conf.d that
  nfs-utils reads after heatsible's file and that undo a pinned port;
- nfs_server_verify: what files/verify.sh found, judged against the table:
  which exports are not served, and a summary of what was verified.

The role's parameters are checked by meta/argument_specs.yml, the request
by heatsible (internal/params) before the role runs: nothing here checks
them again.

exportfs -v and showmount -e are parsed as the real tools print them
(tests/unit/plugins/filter/recorded/: recorded on the test bed): exportfs puts a long path on a
line of its own and the client on the next, prints "*" as "<world>", host
names in the form nfs-utils resolved them (a canonical name, or the
address), networks as written; ganesha's MOUNT service lists a single host
as ADDRESS/32 (or /128).
"""

import hashlib
import ipaddress
import json
import re


def _under(path, mounts):
    """The longest mount point path lies on ('' if none)."""
    best = ''
    for m in mounts:
        if (path == m or path.startswith(m.rstrip('/') + '/')) and len(m) > len(best):
            best = m
    return best


def nfs_server_table(exports, default_options, self_client, bind_address, volumes=None):
    """One entry per directory: {dir, clients: [{to, options}], export_id,
    mount_to}. Entries with the same dir form one export; with self_client
    the server's own address is a client too (with the first client's
    options). Export_Id comes from the path (sha1, 1..65534: stable when
    exports are added or reordered; internal/params refuses two that clash)
    unless an entry gives export_id."""
    mounts = [str(v.get('mount_to')) for v in (volumes or []) if isinstance(v, dict) and v.get('mount_to')]
    table, order = {}, []
    for e in exports:
        d = e['dir']
        if d not in table:
            table[d] = {'dir': d, 'clients': [], 'ids': [], 'mount_to': _under(d, mounts)}
            order.append(d)
        opts = [o.strip() for o in str(e.get('options') or default_options).split(',') if o.strip()]
        table[d]['clients'].append({'to': str(e['to']), 'options': opts})
        if e.get('export_id') is not None:
            table[d]['ids'].append(e['export_id'])
    out = []
    for d in order:
        t = table[d]
        if self_client and str(bind_address) and str(bind_address) not in [c['to'] for c in t['clients']]:
            t['clients'].append({'to': str(bind_address), 'options': list(t['clients'][0]['options'])})
        ids = t.pop('ids')
        t['export_id'] = int(ids[0]) if ids else int(hashlib.sha1(d.encode()).hexdigest()[:8], 16) % 65534 + 1
        out.append(t)
    return out


def _strverscmp(a, b):
    """glibc's strverscmp (what scandir's versionsort compares with), for
    the names of /etc/nfs.conf.d: runs of digits compare as numbers (with
    glibc's rule for leading zeros), the rest byte by byte."""
    def parts(s):
        return re.findall(r'\d+|\D+', s)
    pa, pb = parts(a), parts(b)
    for x, y in zip(pa, pb):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            if x.startswith('0') or y.startswith('0'):
                # fractional parts: compared as strings, a shorter prefix first
                return -1 if x < y else 1
            return -1 if (len(x), x) < (len(y), y) else 1
        return -1 if x.encode() < y.encode() else 1
    return (len(pa) > len(pb)) - (len(pa) < len(pb))


def _nfs_conf_settings(text):
    """[(section, tag, value)] of one nfs.conf file, parsed as nfs-utils'
    conffile.c does: '#' or ';' comments, [section] (lower-cased; a
    [section "arg"] is another section and is left out), tag = value with
    quotes stripped, an escaped newline joins lines. include lines are not
    followed."""
    out, section = [], None
    text = text.replace('\\\n', ' ')
    for line in text.split('\n'):
        line = line.strip()
        if not line or line[0] in '#;':
            continue
        if line[0] == '[':
            body = line[1:].split(']', 1)[0].strip()
            section = None if '"' in body else body.lower()
            continue
        if '=' not in line or section is None:
            continue
        tag, val = line.split('=', 1)
        tag, val = tag.strip().lower(), val.strip()
        if val[:1] in ('"', "'"):
            val = val[1:].split(val[0], 1)[0]
        else:
            val = re.split(r'[#;]', val, 1)[0].strip()
        if tag and val:
            out.append((section, tag, val))
    return out


def nfs_server_nfs_conf_overrides(conf_d, ours, pinned):
    """The settings of /etc/nfs.conf.d that nfs-utils reads after heatsible's
    file (ours: its name) and that set one of the pinned keys (pinned:
    {"section tag": value}) to another value: [{file, section, tag, value,
    want}], in the order nfs-utils reads them. nfs-utils (support/nfs/
    conffile.c, conf_init_file) reads /etc/nfs.conf, then the *.conf files
    of /etc/nfs.conf.d in versionsort order, and the last value of a key
    wins: /etc/nfs.conf itself never overrides heatsible's file."""
    import functools
    names = sorted((n for n in (conf_d or {}) if n.endswith('.conf') and len(n) > 5 and not n.startswith('.')),
                   key=functools.cmp_to_key(_strverscmp))
    later = [n for n in names if _strverscmp(n, ours) > 0]
    last = {}
    for n in later:
        for section, tag, val in _nfs_conf_settings(conf_d[n]):
            key = '%s %s' % (section, tag)
            if key in pinned:
                last[key] = (n, val)
    out = []
    for key, want in pinned.items():
        if key in last and last[key][1] != str(want):
            section, tag = key.split(' ', 1)
            out.append({'file': last[key][0], 'section': section, 'tag': tag, 'value': last[key][1],
                        'want': str(want)})
    return out


def nfs_server_overrides_msg(overrides, host, ours):
    """The refusal for nfs_server_nfs_conf_overrides' findings."""
    if not overrides:
        return ''
    files = []
    for o in overrides:
        if o['file'] not in files:
            files.append(o['file'])
    sets = '; '.join('/etc/nfs.conf.d/%s sets [%s] %s = %s (heatsible pins %s)' % (
        o['file'], o['section'], o['tag'], o['value'], o['want']) for o in overrides)
    return ('%s: %s, which nfs-utils reads after /etc/nfs.conf.d/%s (the files of /etc/nfs.conf.d in version'
            ' order; the last value wins), so the NFSv3 ports heatsible pins would not hold and clients behind'
            ' the security group could not reach them. Nothing was changed by nfs_server. Remove those settings'
            ' from %s (Ubuntu\'s nfsconvert writes local.conf from customised /etc/default/nfs-* files), or'
            ' rename the file so that it sorts before %s, then re-run.' % (
                host, sets, ours, ', '.join('/etc/nfs.conf.d/' + f for f in files), ours))


# ---------------------------------------------------------------- verification

def parse_exportfs(text):
    """exportfs -v: [(path, client, [options])]. A path longer than the
    column goes on its own line and the client follows on the next, indented
    with tabs; a short one is padded with blanks and a tab."""
    out, path = [], None
    for line in text.split('\n'):
        if not line.strip():
            continue
        if line[0] not in ' \t':
            parts = line.split(None, 1)
            path = parts[0]
            if len(parts) == 1:
                continue
            rest = parts[1]
        else:
            rest = line.strip()
        m = re.match(r'^(\S+?)\((.*)\)$', rest.strip())
        if path and m:
            out.append((path, m.group(1), m.group(2).split(',')))
        elif path and rest.strip():
            out.append((path, rest.strip(), []))
    return out


def parse_showmount(text):
    """showmount -e: {path: [clients]} (the first line is the header; a
    path with no clients lists "(everyone)")."""
    out = {}
    for line in text.split('\n')[1:]:
        parts = line.split()
        if not parts:
            continue
        out[parts[0]] = parts[1].split(',') if len(parts) > 1 else []
    return out


def parse_rpcinfo(text):
    """rpcinfo -p: {(program, proto): set(ports)}."""
    out = {}
    for line in text.split('\n'):
        f = line.split()
        if len(f) >= 4 and f[0].isdigit():
            out.setdefault((int(f[0]), f[2]), set()).add(int(f[3]))
    return out


def _net(s):
    try:
        return ipaddress.ip_network(s, strict=False)
    except ValueError:
        return None


def client_forms(to, names):
    """What a listing may show for the client `to`: itself; "*" also as
    "<world>" and "(everyone)"; a host name also as its canonical name and
    its addresses (names: {name: {"canonical", "addresses"}}, resolved on the
    server); an address or network in any notation of the same network."""
    forms = {to}
    if to == '*':
        forms |= {'<world>', '(everyone)'}
    n = names.get(to) if names else None
    if n:
        if n.get('canonical'):
            forms.add(n['canonical'])
        forms |= set(n.get('addresses', []))
    return forms


def client_listed(to, listed, names):
    forms = client_forms(to, names)
    nets = [x for x in (_net(f) for f in forms) if x is not None]
    for c in listed:
        if c in forms:
            return True
        cn = _net(c)
        if cn is not None and cn in nets:
            return True
    return False


def nfs_server_verify(stdout, table, settings):
    """Judge files/verify.sh's output. settings: impl, bind_address,
    url_host, versions, serve (false: this host cannot serve NFS, see
    no_nfsd), no_nfsd (its reason), ports ({mountd, statd, lockd} or {}),
    hint (what to check), nfsls_why (why nfs-ls is not there, when the run
    could not or would not install it).

    Returns {problems: [...], summary: "..."}: each problem completes
    "the NFS server (IMPL) on HOST ..." (tasks/verify.yml)."""
    r = json.loads(stdout)
    impl, addr = settings['impl'], settings['bind_address']
    names = r.get('names', {})
    problems, verified = [], []
    if impl == 'kernel':
        listed = parse_exportfs(r.get('exportfs', ''))
        for t in table:
            for c in t['clients']:
                hits = [x for x in listed if x[0] == t['dir'] and client_listed(c['to'], [x[1]], names)]
                if not hits:
                    problems.append('has no %s for %s in exportfs -v (%s)' % (t['dir'], c['to'], '; '.join(
                        '%s %s' % (x[0], x[1]) for x in listed) or 'empty'))
                elif t.get('mount_to') and not any('mountpoint=' + t['mount_to'] in x[2] for x in hits):
                    problems.append('exports %s to %s without mp=%s in exportfs -v: it would be served from the root'
                                    ' disk while the volume is not mounted' % (t['dir'], c['to'], t['mount_to']))
        if not problems:
            verified.append('in the kernel export table (exportfs -v)')
    if not settings.get('serve', True):
        summary = ('; '.join('%s for %s' % (t['dir'], ', '.join(c['to'] for c in t['clients'])) for t in table)
                   + ': ' + (', '.join(verified) or 'not verified')
                   + '. NOT VERIFIED over NFS: this host cannot serve NFS (%s)' % (settings.get('no_nfsd') or '').strip())
        return {'problems': problems, 'summary': summary}

    port = r.get('port', {})
    if not port.get('open'):
        problems = ['does not answer on %s:2049 after %s s' % (addr, port.get('seconds', '?'))]
    else:
        sm = r.get('showmount', {})
        if not sm.get('ok'):
            problems.append('does not list its exports: showmount -e %s said "%s"' % (addr, sm.get('error', '').strip()))
        else:
            exported = parse_showmount(sm.get('text', ''))
            for t in table:
                if t['dir'] not in exported:
                    problems.append('does not list %s in showmount -e %s (%s)' % (
                        t['dir'], addr, '; '.join(sorted(exported)) or 'empty'))
                    continue
                # The kernel's mountd lists what it likes (an export with a
                # "*" client as "(everyone)", single hosts not always): its
                # clients were checked in exportfs -v. ganesha lists them all.
                if impl == 'kernel':
                    continue
                for c in t['clients']:
                    if not client_listed(c['to'], exported.get(t['dir'], []), names):
                        problems.append('does not list %s for %s in showmount -e %s (%s)' % (
                            t['dir'], c['to'], addr,
                            '; '.join('%s %s' % (k, ','.join(v)) for k, v in sorted(exported.items())) or 'empty'))
            verified.append('listed by its MOUNT service (showmount -e)')
        ports = settings.get('ports') or {}
        if ports and 3 in [int(v) for v in settings['versions']]:
            rpc = parse_rpcinfo(r.get('rpcinfo', ''))
            for what, prog, want in (('mountd', 100005, ports.get('mountd')), ('nlockmgr', 100021, ports.get('lockd')),
                                     ('status (rpc.statd)', 100024, ports.get('statd'))):
                if want and int(want) not in rpc.get((prog, 'tcp'), set()):
                    problems.append('has %s on TCP port(s) %s, not the pinned %s (rpcinfo -p %s): NFSv3 clients behind'
                                    ' the security group cannot reach it' % (
                                        what, ', '.join(str(p) for p in sorted(rpc.get((prog, 'tcp'), set()))) or 'none',
                                        want, addr))
            if not any('rpcinfo' in p or 'pinned' in p for p in problems):
                verified.append('NFSv3 side ports pinned (mountd %s, nlockmgr %s, statd %s)'
                                % (ports.get('mountd'), ports.get('lockd'), ports.get('statd')))
        nfsls = r.get('nfsls')
        if nfsls == 'absent':
            verified.append('NOT VERIFIED by an NFS client: nfs-ls (libnfs-utils) is not installed on this host'
                            + ((': ' + settings['nfsls_why'].strip()) if (settings.get('nfsls_why') or '').strip() else ''))
        else:
            for x in nfsls or []:
                if not x.get('ok'):
                    problems.append('does not serve nfs://%s%s over NFSv%s ("%s")' % (
                        settings['url_host'], x['dir'], x['version'], (x.get('error') or '').strip()))
            want = len(table) * len(settings['versions'])
            ok = len([x for x in nfsls or [] if x.get('ok')])
            if not problems and ok != want:
                problems.append('was verified for %d of %d export and version pairs' % (ok, want))
            if ok == want:
                verified.append('read over NFSv%s (nfs-ls)' % '/v'.join(str(v) for v in settings['versions']))
    summary = '; '.join('%s for %s' % (t['dir'], ', '.join(c['to'] for c in t['clients'])) for t in table) \
        + ': served by %s (%s): %s' % (addr, impl, ', '.join(verified))
    return {'problems': problems, 'summary': summary}


def nfs_server_verify_names(table):
    """The clients that are host names (resolved on the server for the
    verification): not "*", not an address or network."""
    out = []
    for t in table:
        for c in t['clients']:
            to = c['to']
            if to == '*' or _net(to) is not None or to.startswith('@') or '*' in to or '?' in to:
                continue
            if to not in out:
                out.append(to)
    return out


class FilterModule(object):
    def filters(self):
        return {
            'nfs_server_table': nfs_server_table,
            'nfs_server_nfs_conf_overrides': nfs_server_nfs_conf_overrides,
            'nfs_server_overrides_msg': nfs_server_overrides_msg,
            'nfs_server_verify': nfs_server_verify,
            'nfs_server_verify_names': nfs_server_verify_names,
        }
