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
mkdir -p "$FAKE_DIR/calls"
n=$(ls "$FAKE_DIR/calls" | wc -l)
n=$((n + 1))
: > "$out.argv"
for a in "$@"; do printf '%s\n' "$a" >> "$out.argv"; done
cp "$out.argv" "$FAKE_DIR/calls/$n"
req=""
save=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--request" ]; then req="$a"; fi
  if [ "$prev" = "--save" ]; then save="$a"; fi
  prev="$a"
done
stat -c '%a' "$req" > "$out.mode"
cp "$req" "$out.request"
printf '%s\n' "$req" > "$out.path"
if [ -t 0 ]; then echo tty > "$out.stdin"; else cat > "$out.stdin"; fi
echo "heatsible: $2: reading the cluster..." >&2
rc="${FAKE_RC:-0}"
# FAKE_FAIL_AT=N: only call N exits with FAKE_RC, the others with 0
if [ -n "$FAKE_FAIL_AT" ] && [ "$FAKE_FAIL_AT" != "$n" ]; then rc=0; fi
if [ "$rc" = 0 ] && [ -n "$save" ]; then echo 'cluster: k8s-a' > "$save"; fi
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
                           'username': 'ubuntu', 'password': PASSWORDS[2]},
        'ansible': {'ip_address': '10.10.0.5', 'username': 'ansible',
                    'password': PASSWORDS[3]},
    },
}

KNOWN_HOSTS = '/etc/heatsible/known_hosts'


class Obj(object):
    def __init__(self, **kw):
        self.__dict__.update(kw)


def vnfc(vnfc_id, vdu_id, server_id):
    return Obj(id=vnfc_id, vdu_id=vdu_id,
               compute_resource=Obj(
                   resource_id=server_id,
                   vim_level_resource_type='OS::Nova::Server'))


def vnf_instance(instance_id='stack-1234', vnfcs=None):
    if vnfcs is None:
        vnfcs = [vnfc('vnfc-storage', 'storage_server', 'server-s'),
                 vnfc('vnfc-master0', 'masterNode', 'server-m0'),
                 vnfc('vnfc-worker1', 'workerNode', 'server-w1'),
                 vnfc('vnfc-worker2', 'workerNode', 'server-w2')]
    info = Obj(instance_id=instance_id, additional_params=PARAMS,
               vnfc_resource_info=vnfcs)
    return Obj(id='vnf-1', vnfd_id='vnfd-1', instantiated_vnf_info=info)


def scale_request(kind, aspect='worker_instance', steps=1):
    return Obj(type=kind, aspect_id=aspect, number_of_steps=steps,
               additional_params={'is_reverse': 'False'})


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
        os.environ['HEATSIBLE_KNOWN_HOSTS'] = KNOWN_HOSTS
        os.environ['HEATSIBLE_TOPOLOGY_DIR'] = os.path.join(self.dir, 'topo')
        for k in ('HEATSIBLE_BIN', 'FAKE_RC', 'FAKE_STDOUT', 'FAKE_STDERR',
                  'FAKE_FAIL_AT', 'HEATSIBLE_STORAGE_VDU_IDS'):
            os.environ.pop(k, None)
        self.driver = shim.HeatsibleMgmtDriver()

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        shutil.rmtree(self.dir, ignore_errors=True)

    def seen(self, what):
        with open(os.path.join(self.dir, 'seen.' + what)) as f:
            return f.read()

    def calls(self):
        """Every argv the fake got, in order, with the request path as REQ.

        Also checks what every call must hold: no password in the argv,
        a 0600 request file (checked for the last call by the fake).
        """
        d = os.path.join(self.dir, 'calls')
        if not os.path.isdir(d):
            return []
        out = []
        for name in sorted(os.listdir(d), key=int):
            with open(os.path.join(d, name)) as f:
                text = f.read()
            for pw in PASSWORDS:
                self.assertNotIn(pw, text)
            argv = text.splitlines()
            if '--request' in argv:
                i = argv.index('--request') + 1
                self.assertFalse(os.path.exists(argv[i]),
                                 'request file left behind')
                argv[i] = 'REQ'
            out.append(argv)
        if out:
            self.assertEqual(self.seen('mode').strip(), '600')
        return out

    def fake(self, rc, stdout=None, stderr=None, fail_at=None):
        os.environ['FAKE_RC'] = str(rc)
        if stdout is not None:
            os.environ['FAKE_STDOUT'] = json.dumps(stdout, indent=2)
        if stderr is not None:
            os.environ['FAKE_STDERR'] = json.dumps(stderr, indent=2)
        if fail_at is not None:
            os.environ['FAKE_FAIL_AT'] = str(fail_at)

    def tail(self, source=('--stack', 'stack-1234')):
        """What every run's argv ends with."""
        return (['--request', 'REQ', '--package', '/srv/pkg'] + list(source)
                + ['-o', 'json', '--known-hosts', KNOWN_HOSTS])

    def instantiate(self):
        req = Obj(additional_params=PARAMS)
        return self.driver.instantiate_end(None, vnf_instance(), req,
                                           None, None)

    # ---- request file, stdin, exit codes (every hook shares them) -------

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
                                KNOWN_HOSTS])
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

    # ---- heal -----------------------------------------------------------

    def test_heal(self):
        # (hook, VNFC ids, instance, the runs heatsible gets)
        healed = vnf_instance(vnfcs=[
            vnfc('vnfc-worker1', 'workerNode', 'server-w1-new')])
        cases = [
            ('heal_start', [], vnf_instance(), [['--cluster']]),
            ('heal_end', [], vnf_instance('stack-new'), [['--cluster']]),
            ('heal_start', ['vnfc-storage'], vnf_instance(),
             [['--storage-server']]),
            ('heal_end', ['vnfc-storage'], vnf_instance(),
             [['--storage-server']]),
            ('heal_start', ['vnfc-worker1'], vnf_instance(),
             [['--vnfc-resource-id', 'server-w1']]),
            ('heal_start', ['vnfc-master0'], vnf_instance(),
             [['--vnfc-resource-id', 'server-m0']]),
            # at heal_end Tacker has recorded the new server's id
            ('heal_end', ['vnfc-worker1'], healed,
             [['--vnfc-resource-id', 'server-w1-new']]),
            # several VNFCs: the storage server first, then one run per
            # VNFC in the request's order, each id once
            ('heal_start',
             ['vnfc-worker2', 'vnfc-master0', 'vnfc-storage', 'vnfc-worker2'],
             vnf_instance(),
             [['--storage-server'],
              ['--vnfc-resource-id', 'server-w2'],
              ['--vnfc-resource-id', 'server-m0']]),
            ('heal_end', ['vnfc-worker1', 'vnfc-worker2'], vnf_instance(),
             [['--vnfc-resource-id', 'server-w1'],
              ['--vnfc-resource-id', 'server-w2']]),
        ]
        for hook, ids, inst, targets in cases:
            with self.subTest(hook=hook, ids=ids):
                shutil.rmtree(os.path.join(self.dir, 'calls'),
                              ignore_errors=True)
                self.fake(0, stdout={'ok': True, 'exit_code': 0})
                getattr(self.driver, hook)(
                    None, inst,
                    Obj(vnfc_instance_id=ids, additional_params={}),
                    None, None)
                op = hook.replace('_', '-')
                stack = inst.instantiated_vnf_info.instance_id
                self.assertEqual(self.calls(), [
                    ['run', op] + t + self.tail(('--stack', stack))
                    for t in targets])

    def test_heal_of_several_vnfcs_stops_at_the_first_failure(self):
        self.fake(4, stderr={'ok': False, 'exit_code': 4,
                             'error': 'drain timed out (log: /r)'},
                  fail_at=2)
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver.heal_start(
                None, vnf_instance(),
                Obj(vnfc_instance_id=['vnfc-storage', 'vnfc-worker1',
                                      'vnfc-worker2']), None, None)
        calls = self.calls()
        self.assertEqual([c[:4] for c in calls], [
            ['run', 'heal-start', '--storage-server', '--request'],
            ['run', 'heal-start', '--vnfc-resource-id', 'server-w1']])
        msg = str(cm.exception)
        self.assertIn('run 2 of 3; done: --storage-server', msg)
        self.assertIn('drain timed out', msg)
        self.assertEqual(cm.exception.exit_code, 4)

    def test_heal_with_a_bad_vnfc_runs_nothing(self):
        bad = vnf_instance(vnfcs=[
            vnfc('vnfc-storage', 'storage_server', 'server-s'),
            vnfc('vnfc-worker1', 'workerNode', None)])
        for ids, inst, needle in [
                (['vnfc-storage', 'vnfc-nope'], vnf_instance(),
                 'VNFC vnfc-nope is not in the VNF'),
                (['vnfc-storage', 'vnfc-worker1'], bad,
                 'has no compute_resource.resource_id')]:
            with self.subTest(ids=ids):
                self.fake(0)
                with self.assertRaises(shim.HeatsibleError) as cm:
                    self.driver.heal_end(None, inst,
                                         Obj(vnfc_instance_id=ids),
                                         None, None)
                self.assertIn(needle, str(cm.exception))
                self.assertEqual(cm.exception.exit_code, 2)
                self.assertEqual(self.calls(), [])

    def test_storage_vdu_ids_from_the_environment(self):
        os.environ['HEATSIBLE_STORAGE_VDU_IDS'] = 'nfs, workerNode'
        self.fake(0)
        self.driver.heal_end(None, vnf_instance(),
                             Obj(vnfc_instance_id=['vnfc-worker1']),
                             None, None)
        self.assertEqual(self.calls()[0][:3],
                         ['run', 'heal-end', '--storage-server'])

    # ---- scale ----------------------------------------------------------

    def test_scale(self):
        victims = {'scale_name_list': ['worker_instance-a1b2', 'worker_x'],
                   'scale_out_id_list': ['stack-a1b2', 'stack-x']}
        cases = [
            # Tacker's scale-in: the victims by Heat member name
            ('scale_start', 'SCALE_IN', victims,
             ['run', 'scale-start', '--nodes',
              'worker_instance-a1b2,worker_x']),
            # no names: their member stack ids
            ('scale_start', 'SCALE_IN', {'scale_out_id_list': ['stack-a1b2']},
             ['run', 'scale-start', '--nodes', 'stack-a1b2']),
            # rollback of a completed scale-out: the members it added
            ('scale_start', 'SCALE_OUT',
             {'scale_name_list': ['worker_new1', 'worker_new1']},
             ['run', 'scale-start', '--nodes', 'worker_new1']),
            # scale-out: the new members' nested stack ids
            ('scale_end', 'SCALE_OUT',
             {'scale_out_id_list': ['stack-n1', 'stack-n2'], 'vnf': {}},
             ['run', 'scale-end', '--nodes', 'stack-n1,stack-n2']),
        ]
        for hook, kind, kwargs, want in cases:
            with self.subTest(hook=hook, kind=kind, kwargs=kwargs):
                shutil.rmtree(os.path.join(self.dir, 'calls'),
                              ignore_errors=True)
                self.fake(0, stdout={'ok': True, 'exit_code': 0})
                getattr(self.driver, hook)(None, vnf_instance(),
                                           scale_request(kind), None, None,
                                           **kwargs)
                self.assertEqual(self.calls(), [want + self.tail()])

    def test_scale_hooks_that_run_nothing(self):
        for hook, kind, aspect, kwargs in [
                ('scale_start', 'SCALE_OUT', 'worker_instance', {}),
                ('scale_end', 'SCALE_IN', 'worker_instance',
                 {'scale_out_id_list': []}),
                ('scale_end', 'SCALE_OUT', 'worker_instance',
                 {'scale_out_id_list': []}),
                # not an aspect of the cluster
                ('scale_start', 'SCALE_IN', 'other_vdu_group',
                 {'scale_name_list': ['m1']}),
                ('scale_end', 'SCALE_OUT', 'other_vdu_group',
                 {'scale_out_id_list': ['s1']})]:
            with self.subTest(hook=hook, kind=kind, aspect=aspect):
                self.fake(0)
                r = getattr(self.driver, hook)(
                    None, vnf_instance(), scale_request(kind, aspect),
                    None, None, **kwargs)
                self.assertIsNone(r)
                self.assertEqual(self.calls(), [])

    def test_master_aspect_scale_is_refused(self):
        for hook, kind, kwargs in [
                ('scale_start', 'SCALE_IN',
                 {'scale_name_list': ['master_instance-1'],
                  'scale_out_id_list': ['stack-m1']}),
                ('scale_end', 'SCALE_OUT',
                 {'scale_out_id_list': ['stack-m4']})]:
            with self.subTest(hook=hook):
                self.fake(0)
                with self.assertRaises(shim.HeatsibleError) as cm:
                    getattr(self.driver, hook)(
                        None, vnf_instance(),
                        scale_request(kind, 'master_instance'), None, None,
                        **kwargs)
                msg = str(cm.exception)
                self.assertIn('master_instance is the master aspect', msg)
                self.assertIn('nothing was run', msg)
                self.assertEqual(cm.exception.exit_code, 2)
                self.assertEqual(self.calls(), [])

    def test_scale_in_without_victims_is_refused(self):
        self.fake(0)
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver.scale_start(None, vnf_instance(),
                                    scale_request('SCALE_IN'), None, None,
                                    scale_name_list=[], scale_out_id_list=[])
        self.assertIn('no scale-in victims', str(cm.exception))
        self.assertEqual(self.calls(), [])

    def test_scale_failure_raises(self):
        self.fake(2, stderr={'ok': False, 'exit_code': 2,
                             'error': '"w9" is not a node of cluster k8s-a'})
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver.scale_start(None, vnf_instance(),
                                    scale_request('SCALE_IN'), None, None,
                                    scale_name_list=['w9'])
        self.assertIn('heatsible scale-start failed (exit code 2',
                      str(cm.exception))
        self.assertIn('is not a node of cluster', str(cm.exception))

    # ---- terminate ------------------------------------------------------

    def topology_file(self):
        return os.path.join(self.dir, 'topo', 'vnf-1.topology.yaml')

    def terminated(self):
        """The instance as Tacker hands it to terminate_end: stack gone."""
        inst = vnf_instance()
        inst.instantiated_vnf_info.instance_id = None
        inst.instantiated_vnf_info.vnfc_resource_info = []
        return inst

    def test_terminate(self):
        self.fake(0, stdout={'ok': True, 'exit_code': 0})
        topo = self.topology_file()
        self.driver.terminate_start(None, vnf_instance(), Obj(), None, None,
                                    vnf={})
        self.assertEqual(self.calls(), [
            ['topology', '--request', 'REQ', '--stack', 'stack-1234',
             '--save', topo, '-o', 'json']])
        self.assertTrue(os.path.exists(topo))
        self.assertEqual(os.stat(os.path.dirname(topo)).st_mode & 0o777,
                         0o700)
        self.driver.terminate_end(None, self.terminated(), Obj(), None, None)
        self.assertEqual(self.calls()[1], ['run', 'terminate-end'] +
                         self.tail(('--topology', topo)))
        self.assertEqual(json.loads(self.seen('request')), PARAMS)
        self.assertFalse(os.path.exists(topo))

    def test_terminate_end_failure_keeps_the_topology(self):
        os.makedirs(os.path.dirname(self.topology_file()))
        with open(self.topology_file(), 'w') as f:
            f.write('{}')
        self.fake(3, stderr={'ok': False, 'exit_code': 3,
                             'error': 'connecting to the Ansible host'})
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver.terminate_end(None, self.terminated(), Obj(),
                                      None, None)
        self.assertEqual(cm.exception.exit_code, 3)
        self.assertTrue(os.path.exists(self.topology_file()))

    def test_terminate_without_a_saved_topology(self):
        # terminate_start failed (Heat unreadable): logged, not raised, no
        # file, and a stale file from before is gone
        os.makedirs(os.path.dirname(self.topology_file()))
        with open(self.topology_file(), 'w') as f:
            f.write('{"stale": true}')
        self.fake(5, stderr={'ok': False, 'exit_code': 5,
                             'error': 'no OpenStack credentials'})
        self.assertIsNone(self.driver.terminate_start(
            None, vnf_instance(), Obj(), None, None))
        self.assertFalse(os.path.exists(self.topology_file()))
        self.assertEqual(len(self.calls()), 1)
        # then terminate_end has no way to name the cluster: runs nothing
        self.fake(0)
        self.assertIsNone(self.driver.terminate_end(
            None, self.terminated(), Obj(), None, None))
        self.assertEqual(len(self.calls()), 1)
        # unless Tacker still has the stack id
        self.driver.terminate_end(None, vnf_instance(), Obj(), None, None)
        self.assertEqual(self.calls()[1], ['run', 'terminate-end'] +
                         self.tail())

    # ---- the rest -------------------------------------------------------

    def test_hooks_heatsible_has_nothing_for_run_nothing(self):
        self.fake(0)
        inst = vnf_instance()
        for hook in ('instantiate_start',
                     'change_external_connectivity_start',
                     'change_external_connectivity_end'):
            getattr(self.driver, hook)(None, inst, Obj(), None, None)
        self.driver.modify_information_start(None, inst, Obj())
        self.driver.modify_information_end(None, inst, Obj())
        self.assertEqual(self.calls(), [])

    def test_type_and_name(self):
        self.assertEqual(self.driver.get_type(), 'mgmt-drivers-heatsible')
        self.assertEqual(self.driver.get_name(), 'mgmt-drivers-heatsible')
        self.assertTrue(self.driver.get_description())


HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.join(HERE, '..', '..', 'testdata')


@unittest.skipUnless(os.environ.get('HEATSIBLE_REAL_BIN'),
                     'set HEATSIBLE_REAL_BIN to a built heatsible')
class RealHeatsibleTest(unittest.TestCase):
    """The shim's argv against the real heatsible, without OpenStack.

    With no credentials a --stack run ends with exit code 5 after heatsible
    parsed every flag and checked the target (a wrong argv is exit code 2);
    terminate-end with a saved topology gets as far as connecting to the
    Ansible host, here 127.0.0.1 with an empty known_hosts: exit code 3.
    Nothing leaves this machine.
    """

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='heatsible-shim-real-')
        self.saved = dict(os.environ)
        for k in list(os.environ):
            if k.startswith('OS_'):
                del os.environ[k]
        os.environ['HEATSIBLE_BIN'] = os.environ['HEATSIBLE_REAL_BIN']
        os.environ['HEATSIBLE_STATE_DIR'] = os.path.join(self.dir, 'state')
        os.environ['HEATSIBLE_TOPOLOGY_DIR'] = os.path.join(self.dir, 'topo')
        os.environ['HEATSIBLE_PACKAGE_DIR'] = os.path.join(TESTDATA, 'package')
        kh = os.path.join(self.dir, 'known_hosts')
        open(kh, 'w').close()
        os.environ['HEATSIBLE_KNOWN_HOSTS'] = kh
        with open(os.path.join(TESTDATA, 'requests', 'valid.json')) as f:
            params = json.load(f)['additionalParams']
        params['k8s_cluster_installation_param']['ansible'] = {
            'ip_address': '127.0.0.1', 'username': 'nobody',
            'password': PASSWORDS[3]}
        info = Obj(instance_id='k8s-a-stack', additional_params=params,
                   vnfc_resource_info=[
                       vnfc('vnfc-storage', 'storage_server', 'server-s'),
                       vnfc('vnfc-worker1', 'workerNode', 'server-w1')])
        self.inst = Obj(id='vnf-1', vnfd_id='vnfd-1',
                        instantiated_vnf_info=info)
        self.driver = shim.HeatsibleMgmtDriver()

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved)
        shutil.rmtree(self.dir, ignore_errors=True)

    def exit_code(self, fn, *args, **kwargs):
        with self.assertRaises(shim.HeatsibleError) as cm:
            fn(None, self.inst, *args, **kwargs)
        return cm.exception.exit_code, str(cm.exception)

    def test_every_hook_argv_is_accepted(self):
        d = self.driver
        for name, fn, args, kwargs in [
                ('instantiate_end', d.instantiate_end,
                 (Obj(additional_params=None), None, None), {}),
                ('heal_start cluster', d.heal_start,
                 (Obj(vnfc_instance_id=[]), None, None), {}),
                ('heal_end storage+worker', d.heal_end,
                 (Obj(vnfc_instance_id=['vnfc-worker1', 'vnfc-storage']),
                  None, None), {}),
                ('heal_start worker', d.heal_start,
                 (Obj(vnfc_instance_id=['vnfc-worker1']), None, None), {}),
                ('scale_start', d.scale_start,
                 (scale_request('SCALE_IN'), None, None),
                 {'scale_name_list': ['worker_instance-abc']}),
                ('scale_end', d.scale_end,
                 (scale_request('SCALE_OUT'), None, None),
                 {'scale_out_id_list': ['stack-n1', 'stack-n2']})]:
            with self.subTest(hook=name):
                code, msg = self.exit_code(fn, *args, **kwargs)
                self.assertEqual(code, 5, msg)
                self.assertIn('OpenStack', msg)

    def test_terminate_with_the_saved_topology(self):
        # terminate_start cannot read Heat here: logged, nothing saved
        self.assertIsNone(self.driver.terminate_start(
            None, self.inst, Obj(), None, None))
        topo = os.path.join(self.dir, 'topo', 'vnf-1.topology.yaml')
        self.assertFalse(os.path.exists(topo))
        # as if it had: the fixture topology
        os.makedirs(os.path.dirname(topo), exist_ok=True)
        shutil.copy(os.path.join(TESTDATA, 'topology', 'k8s-a.yaml'), topo)
        self.inst.instantiated_vnf_info.instance_id = None
        code, msg = self.exit_code(self.driver.terminate_end, Obj(),
                                   None, None)
        self.assertEqual(code, 3, msg)
        self.assertIn('connecting to the Ansible host', msg)
        self.assertTrue(os.path.exists(topo))


if __name__ == '__main__':
    unittest.main()
