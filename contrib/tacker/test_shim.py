"""Tests of heatsible_mgmt_driver without Tacker and without heatsible.

Run from this directory:  python3 -m unittest -v test_shim

A fake `heatsible` (a shell script put first on PATH) records its argv and
the mode and content of the --request file while it runs, prints a JSON
document the way heatsible -o json does (recap on stdout, error on stderr),
and exits with the code the test chose.
"""

import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heatsible_mgmt_driver as shim  # noqa: E402

# keep the driver's error logs out of the test output
logging.getLogger(shim.__name__).addHandler(logging.NullHandler())

FAKE = r'''#!/bin/sh
# fake heatsible: record what it was given, answer like heatsible -o json
out="$FAKE_DIR/seen"
: > "$out.argv"
for a in "$@"; do printf '%s\n' "$a" >> "$out.argv"; done
req=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--request" ]; then req="$a"; fi
  prev="$a"
done
stat -c '%a' "$req" > "$out.mode"
cp "$req" "$out.request"
printf '%s\n' "$req" > "$out.path"
if [ -t 0 ]; then echo tty > "$out.stdin"; else cat > "$out.stdin"; fi
echo "heatsible: $2: reading the cluster..." >&2
if [ -n "$FAKE_STDOUT" ]; then printf '%s\n' "$FAKE_STDOUT"; fi
if [ -n "$FAKE_STDERR" ]; then printf '%s\n' "$FAKE_STDERR" >&2; fi
exit "${FAKE_RC:-0}"
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
                           'username': 'ubuntu', 'password': PASSWORDS[2]},
        'ansible': {'ip_address': '10.10.0.5', 'username': 'ansible',
                    'password': PASSWORDS[3]},
    },
}


class Obj(object):
    def __init__(self, **kw):
        self.__dict__.update(kw)


def vnf_instance():
    vnfcs = [Obj(id='vnfc-storage', vdu_id='storage_server'),
             Obj(id='vnfc-worker', vdu_id='workerNode')]
    info = Obj(instance_id='stack-1234', additional_params=PARAMS,
               vnfc_resource_info=vnfcs)
    return Obj(id='vnf-1', vnfd_id='vnfd-1', instantiated_vnf_info=info)


class ShimTest(unittest.TestCase):

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
        os.environ['HEATSIBLE_KNOWN_HOSTS'] = '/etc/heatsible/known_hosts'
        for k in ('HEATSIBLE_BIN', 'FAKE_RC', 'FAKE_STDOUT', 'FAKE_STDERR'):
            os.environ.pop(k, None)
        self.driver = shim.HeatsibleMgmtDriver()

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        shutil.rmtree(self.dir, ignore_errors=True)

    def seen(self, what):
        with open(os.path.join(self.dir, 'seen.' + what)) as f:
            return f.read()

    def fake(self, rc, stdout=None, stderr=None):
        os.environ['FAKE_RC'] = str(rc)
        if stdout is not None:
            os.environ['FAKE_STDOUT'] = json.dumps(stdout, indent=2)
        if stderr is not None:
            os.environ['FAKE_STDERR'] = json.dumps(stderr, indent=2)

    def instantiate(self):
        req = Obj(additional_params=PARAMS)
        return self.driver.instantiate_end(None, vnf_instance(), req,
                                           None, None)

    def test_instantiate_end_argv_and_request_file(self):
        self.fake(0, stdout={'ok': True, 'exit_code': 0, 'changed': 3,
                             'changed_hosts': 1, 'record': '/var/lib/x'})
        result = self.instantiate()
        self.assertEqual(result['changed'], 3)
        argv = self.seen('argv').splitlines()
        req = self.seen('path').strip()
        self.assertEqual(argv, ['run', 'instantiate-end', '--request', req,
                                '--package', '/srv/pkg', '--stack',
                                'stack-1234', '-o', 'json', '--known-hosts',
                                '/etc/heatsible/known_hosts'])
        # no password in argv
        for pw in PASSWORDS:
            self.assertNotIn(pw, self.seen('argv'))
        # the request file was 0600 while heatsible ran, held the params ...
        self.assertEqual(self.seen('mode').strip(), '600')
        self.assertEqual(json.loads(self.seen('request')), PARAMS)
        # ... its directory was private, and both are gone now
        self.assertFalse(os.path.exists(req))
        self.assertFalse(os.path.exists(os.path.dirname(req)))
        # stdin was /dev/null (empty, not a terminal)
        self.assertEqual(self.seen('stdin'), '')

    def test_exit_codes_raise_with_the_json_error(self):
        for rc, needle in [
                (1, 'internal error'),
                (2, 'invalid input'),
                (3, 'could not be reached'),
                (4, 'a task failed'),
                (5, 'OpenStack/Heat'),
                (6, 'refused for safety'),
                (130, 'interrupted')]:
            with self.subTest(rc=rc):
                err = {'ok': False, 'exit_code': rc,
                       'error': 'the message %d (log: /x/run.log)' % rc}
                self.fake(rc, stderr=err)
                with self.assertRaises(shim.HeatsibleError) as cm:
                    self.instantiate()
                e = cm.exception
                self.assertEqual(e.exit_code, rc)
                self.assertIn('exit code %d' % rc, str(e))
                self.assertIn(needle, str(e))
                self.assertIn('the message %d (log: /x/run.log)' % rc, str(e))
                self.assertEqual(e.retryable, rc in (3, 6))
                # removed after a failure too
                self.assertFalse(os.path.exists(self.seen('path').strip()))

    def test_problems_are_in_the_message(self):
        self.fake(2, stderr={
            'ok': False, 'exit_code': 2, 'error': 'invalid',
            'problems': [{'path': 'additionalParams.x', 'message': 'bad'}]})
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.instantiate()
        self.assertIn('additionalParams.x: bad', str(cm.exception))

    def test_task_failure_keeps_the_recap(self):
        recap = {'ok': False, 'exit_code': 4, 'record': '/r',
                 'recap': {'storage-server': {'failed': 1}}}
        self.fake(4, stdout=recap, stderr={'ok': False, 'exit_code': 4,
                                          'error': 'task failed (log: /r)'})
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.instantiate()
        self.assertEqual(cm.exception.result['record'], '/r')

    def test_heal_targets(self):
        self.fake(0, stdout={'ok': True, 'exit_code': 0})
        cases = [
            ('heal_start', ['vnfc-storage'],
             ['run', 'heal-start', '--storage-server']),
            ('heal_end', ['vnfc-storage'],
             ['run', 'heal-end', '--storage-server']),
            ('heal_end', [], ['run', 'heal-end', '--cluster']),
        ]
        for hook, ids, want in cases:
            with self.subTest(hook=hook, ids=ids):
                getattr(self.driver, hook)(
                    None, vnf_instance(),
                    Obj(vnfc_instance_id=ids, additional_params={}),
                    None, None)
                self.assertEqual(self.seen('argv').splitlines()[:3], want)

    def test_not_implemented_hooks_run_nothing(self):
        self.fake(0)
        inst = vnf_instance()
        self.driver.heal_start(None, inst, Obj(vnfc_instance_id=[]),
                               None, None)
        self.driver.heal_end(None, inst,
                             Obj(vnfc_instance_id=['vnfc-worker']),
                             None, None)
        for hook in ('instantiate_start', 'terminate_start', 'terminate_end',
                     'scale_start', 'scale_end',
                     'change_external_connectivity_start',
                     'change_external_connectivity_end'):
            getattr(self.driver, hook)(None, inst, Obj(), None, None)
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'seen.argv')))

    def test_type_and_name(self):
        self.assertEqual(self.driver.get_type(), 'mgmt-drivers-heatsible')
        self.assertEqual(self.driver.get_name(), 'mgmt-drivers-heatsible')
        self.assertTrue(self.driver.get_description())


if __name__ == '__main__':
    unittest.main()
