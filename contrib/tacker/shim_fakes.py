"""Fakes shared by the shim's tests: a fake heatsible, Tacker-like objects.

A fake `heatsible` (a shell script put first on PATH) records its argv and
the mode and content of the --request file while it runs, writes the --save
and --vim-info files the way heatsible does, prints a JSON document the way
heatsible -o json does (recap on stdout, error on stderr), and exits with the
code the test chose.

FakeVims answers like the shim's TackerVims (Tacker's NfvoPlugin as the
shim uses it: VIMs as Tacker's dicts, names unique per project) and records
what it was asked.
"""

import copy
import json
import logging
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heatsible_mgmt_driver as shim  # noqa: E402

FAKE = r'''#!/bin/sh
# fake heatsible: record what it was given, answer like heatsible -o json
out="$FAKE_DIR/seen"
mkdir -p "$FAKE_DIR/calls"
n=$(ls "$FAKE_DIR/calls" | grep -c -v request)
n=$((n + 1))
: > "$out.argv"
for a in "$@"; do printf '%s\n' "$a" >> "$out.argv"; done
cp "$out.argv" "$FAKE_DIR/calls/$n"
# the events file: "heatsible" and its argv without paths and ids of
# files, shared with the fake Tacker driver of test_kubeadm
ev="heatsible"
skip=""
for a in "$@"; do
  if [ -n "$skip" ]; then skip=""; continue; fi
  case "$a" in
    --request|--vim-info|--save|--package|--stack|--known-hosts|-o)
      skip=1; continue ;;
    --topology) ev="$ev $a"; skip=1; continue ;;
  esac
  ev="$ev $a"
done
echo "$ev" >> "$FAKE_DIR/events"
req=""
save=""
vim=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--request" ]; then req="$a"; fi
  if [ "$prev" = "--save" ]; then save="$a"; fi
  if [ "$prev" = "--vim-info" ]; then vim="$a"; fi
  prev="$a"
done
stat -c '%a' "$req" > "$out.mode"
cp "$req" "$out.request"
cp "$req" "$FAKE_DIR/calls/$n.request"
printf '%s\n' "$req" > "$out.path"
printf '%s\n' "$vim" > "$out.vimpath"
if [ -t 0 ]; then echo tty > "$out.stdin"; else cat > "$out.stdin"; fi
echo "heatsible: $2: reading the cluster..." >&2
rc="${FAKE_RC:-0}"
# FAKE_FAIL_AT=N: only call N exits with FAKE_RC, the others with 0
if [ -n "$FAKE_FAIL_AT" ] && [ "$FAKE_FAIL_AT" != "$n" ]; then rc=0; fi
if [ "$rc" = 0 ] && [ -n "$save" ]; then echo 'cluster: k8s-a' > "$save"; fi
if [ "$rc" = 0 ] && [ -n "$vim" ] && [ -n "$FAKE_VIM" ]; then
  (umask 077; printf '%s\n' "$FAKE_VIM" > "$vim")
  if [ -n "$FAKE_VIM_MODE" ]; then chmod "$FAKE_VIM_MODE" "$vim"; fi
fi
if [ -n "$FAKE_STDOUT" ]; then printf '%s\n' "$FAKE_STDOUT"; fi
if [ "$rc" != 0 ] && [ -n "$FAKE_STDERR" ]; then
  printf '%s\n' "$FAKE_STDERR" >&2
fi
exit "$rc"
'''

PASSWORDS = ['test-password-m', 'test-password-w', 'test-password-s',
             'test-password-a']

PARAMS = {
    'k8s_cluster_installation_param': {
        'master_node': {'aspect_id': 'master_instance',
                        'username': 'ubuntu', 'password': PASSWORDS[0]},
        'worker_node': {'aspect_id': 'worker_instance',
                        'username': 'ubuntu', 'password': PASSWORDS[1]},
        'storage_server': {'ssh_cp_name': 'storage_server_CP',
                           'nic_cp_name': 'storage_server_CP',
                           'username': 'ubuntu', 'password': PASSWORDS[2]},
        'ansible': {'ip_address': '10.10.0.5', 'username': 'ansible',
                    'password': PASSWORDS[3]},
    },
}

KNOWN_HOSTS = '/etc/heatsible/known_hosts'

TOKEN = 'eyJhbGciOiJSUzI1NiJ9.test-bearer-token.c2lnbmF0dXJl'
CA = ('-----BEGIN CERTIFICATE-----\nMIIBtest\n'
      '-----END CERTIFICATE-----\n')
SERVER = 'https://10.10.0.12:6443'


def vim_doc(name=None, server=SERVER, token=TOKEN, ca=CA):
    """heatsible's "vim" object (docs/hooks.md)."""
    return {'vim_name': name, 'server': server, 'ca_cert': ca,
            'bearer_token': token,
            'service_account': {'namespace': 'kube-system',
                                'name': 'heatsible-tacker-vim'},
            'cluster': 'k8s-a'}


class Obj(object):
    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return 'Obj(%r)' % self.__dict__


class Instance(Obj):
    """A VnfInstance: save() is counted, and copies what it would store."""

    def __init__(self, **kw):
        self.saves = 0
        self.saved_connections = None
        super().__init__(**kw)

    def save(self):
        self.saves += 1
        self.saved_connections = list(self.vim_connection_info)


def vnfc(vnfc_id, vdu_id, server_id, cps=None):
    v = Obj(id=vnfc_id, vdu_id=vdu_id,
            compute_resource=Obj(
                resource_id=server_id,
                vim_level_resource_type='OS::Nova::Server'))
    if cps is not None:
        v.vnfc_cp_info = [Obj(cpd_id=c) for c in cps]
    return v


def openstack_vim_entry():
    return Obj(id='conn-openstack', vim_id='vim-openstack',
               vim_type='openstack', access_info={}, extra={})


def vnf_instance(instance_id='stack-1234', vnfcs=None, params=None,
                 vnf_id='vnf-1'):
    if vnfcs is None:
        vnfcs = [vnfc('vnfc-storage', 'storage_server', 'server-s'),
                 vnfc('vnfc-master0', 'masterNode', 'server-m0'),
                 vnfc('vnfc-worker1', 'workerNode', 'server-w1'),
                 vnfc('vnfc-worker2', 'workerNode', 'server-w2')]
    info = Obj(instance_id=instance_id,
               additional_params=copy.deepcopy(params or PARAMS),
               vnfc_resource_info=vnfcs)
    return Instance(id=vnf_id, vnfd_id='vnfd-1', instantiated_vnf_info=info,
                    vim_connection_info=[openstack_vim_entry()])


def scale_request(kind, aspect='worker_instance', steps=1):
    return Obj(type=kind, aspect_id=aspect, number_of_steps=steps,
               additional_params={'is_reverse': 'False'})


CONTEXT = Obj(project_id='project-1', is_admin=False)


class FakeVims(object):
    """Tacker's VIM registry as the shim's TackerVims presents it."""

    def __init__(self):
        self.vims = {}   # id -> Tacker's VIM dict
        self.asked = []  # (method, args)
        self.n = 0

    def add(self, name, auth_url='https://10.0.0.9:6443', extra=None,
            tenant='project-1'):
        self.n += 1
        vim_id = 'vim-old-%d' % self.n
        self.vims[vim_id] = {'id': vim_id, 'name': name, 'type': 'kubernetes',
                             'auth_url': auth_url, 'tenant_id': tenant,
                             'extra': extra or {}}
        return vim_id

    def find(self, context, name):
        self.asked.append(('find', name))
        return [copy.deepcopy(v) for v in self.vims.values()
                if v['name'] == name and
                v['tenant_id'] == context.project_id]

    def create(self, context, body):
        self.asked.append(('create', copy.deepcopy(body)))
        vim = body['vim']
        for v in self.vims.values():
            if v['name'] == vim['name'] and v['tenant_id'] == \
                    vim['tenant_id']:
                raise RuntimeError('vim already exist with given '
                                   "['tenant_id', 'name', 'deleted_at']")
        self.n += 1
        vim_id = 'vim-new-%d' % self.n
        self.vims[vim_id] = {'id': vim_id, 'name': vim['name'],
                             'type': vim['type'],
                             'auth_url': vim['auth_url'],
                             'tenant_id': vim['tenant_id'],
                             'extra': copy.deepcopy(vim.get('extra') or {})}
        return copy.deepcopy(self.vims[vim_id])

    def delete(self, context, vim_id):
        self.asked.append(('delete', vim_id))
        del self.vims[vim_id]

    def connection_info(self, vim_id, server):
        self.asked.append(('connection_info', vim_id, server))
        return Obj(id='conn-' + vim_id, vim_id=vim_id, vim_type='kubernetes',
                   access_info={'auth_url': server}, interface_info=None,
                   extra={})

    def changes(self):
        return [a for a in self.asked if a[0] in ('create', 'delete')]


class NoVims(object):
    """A registry that must not be used."""

    def __getattr__(self, name):
        raise AssertionError('the VIM registry was used: %s' % name)


class Records(logging.Handler):
    """Every log record of the shim, formatted."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class FakeHeatsibleCase(unittest.TestCase):
    """A fake heatsible first on PATH, a fake VIM registry, the shim."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='heatsible-shim-test-')
        bindir = os.path.join(self.dir, 'bin')
        os.mkdir(bindir)
        fake = os.path.join(bindir, 'heatsible')
        with open(fake, 'w') as f:
            f.write(FAKE)
        os.chmod(fake, 0o755)
        self.saved = dict(os.environ)
        os.environ['PATH'] = bindir + os.pathsep + os.environ.get('PATH', '')
        os.environ['FAKE_DIR'] = self.dir
        os.environ['HEATSIBLE_PACKAGE_DIR'] = '/srv/pkg'
        os.environ['HEATSIBLE_KNOWN_HOSTS'] = KNOWN_HOSTS
        os.environ['HEATSIBLE_TOPOLOGY_DIR'] = os.path.join(self.dir, 'topo')
        for k in ('HEATSIBLE_BIN', 'FAKE_RC', 'FAKE_STDOUT', 'FAKE_STDERR',
                  'FAKE_FAIL_AT', 'FAKE_VIM', 'FAKE_VIM_MODE',
                  'HEATSIBLE_STORAGE_VDU_IDS', 'HEATSIBLE_ANSIBLE_HOST',
                  'HEATSIBLE_REGISTER_VIM'):
            os.environ.pop(k, None)
        os.environ['FAKE_VIM'] = json.dumps(vim_doc())
        self.vims = FakeVims()
        self.driver = self.make_driver()
        self.driver.vims = self.vims
        self.logs = Records()
        logging.getLogger(shim.__name__).addHandler(self.logs)
        logging.getLogger(shim.__name__).propagate = False

    def make_driver(self):
        return shim.HeatsibleMgmtDriver()

    def tearDown(self):
        logging.getLogger(shim.__name__).removeHandler(self.logs)
        os.environ.clear()
        os.environ.update(self.saved)
        shutil.rmtree(self.dir, ignore_errors=True)

    def seen(self, what):
        with open(os.path.join(self.dir, 'seen.' + what)) as f:
            return f.read()

    def requests(self):
        """The request file each call got, parsed, in order."""
        d = os.path.join(self.dir, 'calls')
        if not os.path.isdir(d):
            return []
        names = sorted((n for n in os.listdir(d) if n.endswith('.request')),
                       key=lambda n: int(n.split('.')[0]))
        out = []
        for n in names:
            with open(os.path.join(d, n)) as f:
                out.append(json.load(f))
        return out

    def calls(self):
        """Every argv the fake got, in order; request path REQ, --vim-info
        path VIM.

        Also checks what every call must hold: no password or token in the
        argv, a 0600 request file (checked for the last call by the fake),
        and neither file left behind.
        """
        d = os.path.join(self.dir, 'calls')
        if not os.path.isdir(d):
            return []
        out = []
        for name in sorted((n for n in os.listdir(d) if n.isdigit()),
                           key=int):
            with open(os.path.join(d, name)) as f:
                text = f.read()
            for pw in PASSWORDS + [TOKEN]:
                self.assertNotIn(pw, text)
            argv = text.splitlines()
            for flag, label in (('--request', 'REQ'), ('--vim-info', 'VIM')):
                if flag in argv:
                    i = argv.index(flag) + 1
                    self.assertFalse(os.path.exists(argv[i]),
                                     '%s file left behind' % flag)
                    argv[i] = label
            out.append(argv)
        if out:
            self.assertEqual(self.seen('mode').strip(), '600')
        return out

    def fake(self, rc, stdout=None, stderr=None, fail_at=None, vim=None):
        os.environ['FAKE_RC'] = str(rc)
        if stdout is not None:
            os.environ['FAKE_STDOUT'] = json.dumps(stdout, indent=2)
        if stderr is not None:
            os.environ['FAKE_STDERR'] = json.dumps(stderr, indent=2)
        if fail_at is not None:
            os.environ['FAKE_FAIL_AT'] = str(fail_at)
        if vim is not None:
            os.environ['FAKE_VIM'] = json.dumps(vim)

    def tail(self, source=('--stack', 'stack-1234'), where=()):
        """What every run's argv ends with."""
        return (['--request', 'REQ', '--package', '/srv/pkg'] + list(source)
                + list(where) + ['-o', 'json', '--known-hosts', KNOWN_HOSTS])

    def no_token_logged(self):
        for line in self.logs.lines:
            self.assertNotIn(TOKEN, line)
