#!/usr/bin/python3
# kubespray STAND-IN (testbed/kubespray): writes one JSON record of a playbook
# invocation to DIR/<seq>-<playbook>.json. seq is 1 + the highest seq in DIR,
# taken under an flock on DIR/.lock, so concurrent runs never share a number;
# the file appears atomically (written to a temporary name, then renamed).
#
# It adds what only the machine that runs ansible-playbook can see (the module
# runs there: the record task is delegated to localhost):
#   inventory_files: each inventory source with its format by file name
#     (.ini, .yaml/.yml) and by parsing (YAML mapping, or INI sections), and
#     its mode;
#   argv: ansible-playbook's command line (the nearest ancestor process that
#     is ansible-playbook), URL user:password@ masked;
#   vars_files: every -e @FILE of that command line with its mode.
import datetime
import fcntl
import json
import os
import re
import stat

from ansible.module_utils.basic import AnsibleModule

USERINFO = re.compile(r'//[^/@\s]*@')


def mask(s):
    return USERINFO.sub('//********@', s)


def file_format(path):
    # By parsing: a YAML inventory is a mapping; an INI one has [sections]
    # (which YAML reads as a list, or not at all).
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return 'unreadable: %s' % e.strerror
    try:
        import yaml
        doc = yaml.safe_load(text)
        if isinstance(doc, dict):
            return 'yaml'
    except Exception:
        pass
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith(('#', ';'))]
    if lines and all(not l.startswith('[') or re.match(r'^\[[^\]]+\]$', l) for l in lines) and lines[0].startswith('['):
        return 'ini'
    return 'unknown'


def inventory_files(sources):
    out = []
    for src in sources or []:
        ext = os.path.splitext(src)[1]
        rec = {'path': src, 'by_name': {'.ini': 'ini', '.yaml': 'yaml', '.yml': 'yaml'}.get(ext, 'other')}
        try:
            st = os.stat(src)
            rec['mode'] = '%04o' % stat.S_IMODE(st.st_mode)
            rec['parsed'] = file_format(src) if stat.S_ISREG(st.st_mode) else 'directory'
        except OSError as e:
            rec['parsed'] = 'missing: %s' % e.strerror
        out.append(rec)
    return out


def playbook_argv():
    pid = os.getppid()
    while pid > 1:
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                argv = [a.decode('utf-8', 'replace') for a in f.read().split(b'\0') if a]
            with open('/proc/%d/stat' % pid) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return None
        if any(os.path.basename(a) == 'ansible-playbook' for a in argv[:2]):
            return argv
        pid = ppid
    return None


def vars_files(argv):
    out = []
    for i, a in enumerate(argv or []):
        v = None
        if a in ('-e', '--extra-vars') and i + 1 < len(argv):
            v = argv[i + 1]
        elif a.startswith('--extra-vars='):
            v = a.split('=', 1)[1]
        if v and v.startswith('@'):
            p = v[1:]
            try:
                out.append({'path': p, 'mode': '%04o' % stat.S_IMODE(os.stat(p).st_mode)})
            except OSError as e:
                out.append({'path': p, 'mode': None, 'error': e.strerror})
    return out


def main():
    m = AnsibleModule(argument_spec=dict(
        dir=dict(type='path', required=True),
        playbook=dict(type='str', required=True),
        record=dict(type='dict', required=True),
    ), supports_check_mode=True)
    d, pb, rec = m.params['dir'], m.params['playbook'], dict(m.params['record'])
    base = re.sub(r'\.ya?ml$', '', os.path.basename(pb))
    os.makedirs(d, exist_ok=True)
    groups = rec.get('groups') or {}
    rec['groups'] = {g: sorted(hs or []) for g, hs in sorted(groups.items())}
    rec['inventory_files'] = inventory_files(rec.get('ansible_inventory_sources'))
    argv = playbook_argv()
    rec['argv'] = [mask(a) for a in argv] if argv is not None else None
    rec['vars_files'] = vars_files(argv)
    with open(os.path.join(d, '.lock'), 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        seqs = [int(x.group(1)) for x in (re.match(r'^(\d+)-.*\.json$', f) for f in os.listdir(d)) if x]
        seq = max(seqs or [0]) + 1
        path = os.path.join(d, '%04d-%s.json' % (seq, base))
        out = {'seq': seq, 'time': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='milliseconds')}
        out.update(rec)
        tmp = os.path.join(d, '.%04d-%s.json.tmp' % (seq, base))
        with open(tmp, 'w') as f:
            json.dump(out, f, indent=2, sort_keys=True)
            f.write('\n')
        os.replace(tmp, path)
    m.exit_json(changed=True, path=path, seq=seq)


if __name__ == '__main__':
    main()
