#!/usr/bin/python3
# kubespray STAND-IN (testbed/kubespray): writes one JSON record of a playbook
# invocation to DIR/<seq>-<playbook>.json. seq is 1 + the highest seq in DIR,
# taken under an flock on DIR/.lock, so concurrent runs never share a number;
# the file appears atomically (written to a temporary name, then renamed).
import datetime
import fcntl
import json
import os
import re

from ansible.module_utils.basic import AnsibleModule


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
