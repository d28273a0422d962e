"""Tests of heatsible_vnflcm_v2.py, Tacker's v2 API (SOL003 v3) script.

Run with the Python of a Tacker installation (the test bed's venv, built
by testbed/tacker/tacker.sh install):

    cd contrib/tacker
    /var/cache/heatsible/tacker/venv-*/bin/python -m unittest -v test_v2

What is real here: Tacker's own v2 code makes every input and consumes
every output. The package is the PV package built by v2/make_csar.py and
read by Tacker's Vnfd (its VNFD: which script runs for which operation);
the grant requests come from Tacker's VnfLcmDriverV2 (instantiate_grant,
heal_grant, scale_grant); the VNF instance's instantiatedVnfInfo from
Tacker's OpenStack infra driver (_make_instantiated_vnf_info, and its
heal() and scale() for what Heat is asked to replace) reading the Heat
stack of v2_fakes.HeatModel; and the script is run by Tacker's own
VnfLcmDriverV2._exec_mgmt_driver_script (python SCRIPT, the pickled dict
on stdin, the pickled answer read back into the VnfInstanceV2, stderr into
MgmtDriverExecutionFailed). The stand-ins: heatsible (v2_fakes's fake,
which records its argv, request file and environment) and Heat (the model).

Without Tacker importable these classes are skipped, saying so; the
script's helpers that need no Tacker are tested in any case.
"""

import copy
import glob
import io
import json
import os
import pickle
import shutil
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, 'v2'))
import heatsible_vnflcm_v2 as v2  # noqa: E402
import make_csar  # noqa: E402
import v2_fakes  # noqa: E402

try:
    import warnings
    warnings.filterwarnings('ignore')
    import tacker.common.config  # noqa: F401  (registers DEFAULT options)
    from tacker.sol_refactored.common import exceptions as sol_ex
    from tacker.sol_refactored.common import vnf_instance_utils as inst_utils
    from tacker.sol_refactored.common import vnfd_utils
    from tacker.sol_refactored.conductor import vnflcm_driver_v2 as d2
    from tacker.sol_refactored.infra_drivers.openstack import heat_utils
    from tacker.sol_refactored.infra_drivers.openstack import openstack
    from tacker.sol_refactored import objects
    objects.register_all()
    TACKER = None
except ImportError as e:  # pragma: no cover - depends on the interpreter
    TACKER = ('Tacker is not importable with %s (%s): run these tests with '
              'the Python of the Tacker venv that testbed/tacker/tacker.sh '
              'install builds' % (sys.executable, e))

VNFD_ID = '5a1e0c3b-7d2f-4c8e-9b6a-4e2a7f3c9d10'
INST_ID = '7d3c1e52-9a4b-4f0e-8c21-5b6a7d8e9f01'
REQUESTS = os.path.join(HERE, 'v2', 'requests')
VIM_PASSWORD = 'vim-secret-Pw0'
TOKEN = 'eyJhbGciOiJSUzI1NiJ9.test-bearer-token.c2lnbmF0dXJl'
CA = ('-----BEGIN CERTIFICATE-----\nMIIBtest\n'
      '-----END CERTIFICATE-----\n')
SERVER = 'https://10.231.0.12:6443'


def vim_doc(name='kubernetes_vim', token=TOKEN, ca=CA):
    """heatsible's "vim" object (docs/hooks.md)."""
    return {'vim_name': name, 'server': SERVER, 'ca_cert': ca,
            'bearer_token': token,
            'service_account': {'namespace': 'kube-system',
                                'name': 'heatsible-tacker-vim'},
            'cluster': 'vnf-' + INST_ID}


def read(path):
    with open(path) as f:
        return f.read()


def request(name):
    with open(os.path.join(REQUESTS, name)) as f:
        return json.load(f)


def params():
    return copy.deepcopy(request('instantiate.json')['additionalParams'])


def secrets_of(p):
    """Every password and proxy credential in the parameters."""
    out = []

    def walk(v, key=''):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif isinstance(v, str) and ('password' in key or '@' in v):
            out.append(v)
    walk(p)
    return out


class HelpersTest(unittest.TestCase):
    """What needs no Tacker."""

    def test_mysql_order_sorts_shorter_keys_first(self):
        keys = ['kubernetes_vim', 'vim1', 'default', 'zz']
        self.assertEqual(sorted(keys, key=v2.mysql_order),
                         ['zz', 'vim1', 'default', 'kubernetes_vim'])

    def test_last_json_object_after_progress_lines(self):
        text = ('heatsible: heal-start: reading the cluster...\n'
                '{"error": "first"}\nmore {not json\n'
                '{"error": "pv nfs-pv1 is Bound", "exit_code": 6}\n')
        self.assertEqual(v2._last_json_object(text)['exit_code'], 6)

    def test_stack_uuid(self):
        self.assertEqual(v2._stack_uuid('vnf-1/abc'), 'abc')
        self.assertEqual(v2._stack_uuid('abc'), 'abc')

    def test_not_a_pickle_fails_without_output(self):
        out, err = io.BytesIO(), io.StringIO()
        rc = v2.main(io.BytesIO(b'not a pickle'), out, err, {})
        self.assertEqual(rc, v2.EXIT_INTERNAL)
        self.assertEqual(out.getvalue(), b'')
        self.assertIn('cannot read', err.getvalue())

    def test_operations_without_anything_to_do_answer_nothing(self):
        for op in ('modify_information_end', 'change_current_package_start',
                   'scale_rollback_end'):
            out, err = io.BytesIO(), io.StringIO()
            data = {'operation': op, 'request': {}, 'vnf_instance': {
                'id': INST_ID}, 'user_script_err_handling_data': {}}
            rc = v2.main(io.BytesIO(pickle.dumps(data)), out, err, {})
            self.assertEqual((rc, out.getvalue()), (0, b''), op)


@unittest.skipIf(TACKER, TACKER)
class V2Base(unittest.TestCase):
    """A fake heatsible, the built package, Tacker's objects and driver."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='heatsible-test-v2-')
        zip_path = os.path.join(cls.tmp, 'pv.zip')
        make_csar.build(zip_path)
        cls.csar = os.path.join(cls.tmp, 'csar')
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(cls.csar)
        cls.vnfd = vnfd_utils.Vnfd(VNFD_ID)
        cls.vnfd.init_from_csar_dir(cls.csar)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='heatsible-test-v2-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.fake_dir = os.path.join(self.dir, 'fake')
        os.makedirs(self.fake_dir)
        bindir = os.path.join(self.dir, 'bin')
        os.makedirs(bindir)
        fake = os.path.join(bindir, 'heatsible')
        with open(fake, 'w') as f:
            f.write(v2_fakes.FAKE_HEATSIBLE)
        os.chmod(fake, 0o755)
        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(),
                                 os.environ.update(saved)))
        for k in list(os.environ):
            if k.startswith(('HEATSIBLE_', 'FAKE_', 'OS_')):
                del os.environ[k]
        os.environ.update({
            'PATH': bindir + os.pathsep + os.environ.get('PATH', ''),
            'FAKE_DIR': self.fake_dir,
            'FAKE_EXPECT_OS_PASSWORD': VIM_PASSWORD,
            'FAKE_VIM': json.dumps(vim_doc()),
            'HEATSIBLE_STATE_DIR': os.path.join(self.dir, 'state'),
            # what the conductor's environment may hold besides: the VIM's
            # credentials must replace these
            'OS_CLOUD': 'conductor-cloud', 'OS_PASSWORD': 'not-the-vim-one',
        })
        self.driver = object.__new__(d2.VnfLcmDriverV2)
        self.inst = objects.VnfInstanceV2(
            id=INST_ID, vnfdId=VNFD_ID, vnfProvider='heatsible',
            vnfProductName='heatsible PV cluster', vnfSoftwareVersion='1.0',
            vnfdVersion='1.0', instantiationState='NOT_INSTANTIATED')
        self.inst.vimConnectionInfo = {'vim1': self.openstack_vim()}
        self.heat = v2_fakes.HeatModel(INST_ID)

    @staticmethod
    def openstack_vim():
        # as Tacker's vim_utils.vim_to_conn_info makes it from its VIM DB
        return objects.VimConnectionInfo(
            vimId='2f3e4d5c-6b7a-4890-a1b2-c3d4e5f60718',
            vimType='ETSINFV.OPENSTACK_KEYSTONE.V_3',
            interfaceInfo={'endpoint': 'http://127.0.0.1:25000/v3',
                           'skipCertificateHostnameCheck': True,
                           'skipCertificateVerification': True},
            accessInfo={'username': 'admin', 'password': VIM_PASSWORD,
                        'region': 'RegionOne', 'project': 'admin',
                        'projectDomain': 'Default', 'userDomain': 'Default'},
            extra={})

    # ---- Tacker's side --------------------------------------------------

    def grant_request(self, op, req):
        grant_req = objects.GrantRequestV1(
            vnfInstanceId=INST_ID, vnfLcmOpOccId='op-' + op.lower(),
            vnfdId=VNFD_ID, operation=op, isAutomaticInvocation=False)
        getattr(self.driver, op.lower() + '_grant')(
            grant_req, req, self.inst, self.vnfd)
        grant = objects.GrantV1(id='grant-1', vnfInstanceId=INST_ID,
                                vnfLcmOpOccId='op-' + op.lower())
        return grant_req, grant

    def hook(self, operation, req, grant_req=None, grant=None, data=None):
        """The script run as Tacker's conductor runs it; data: the
        user_script_err_handling_data dict (shared across one process())."""
        data = {} if data is None else data
        self.driver._exec_mgmt_driver_script(
            operation, 'simple', req, self.inst, grant_req, grant,
            self.vnfd, data)
        return data

    def instantiated(self):
        """The instance after Tacker's instantiate (up to instantiate_end)."""
        req = objects.InstantiateVnfRequest.from_dict(
            request('instantiate.json'))
        grant_req, grant = self.grant_request('INSTANTIATE', req)
        openstack.Openstack()._make_instantiated_vnf_info(
            req, self.inst, grant_req, grant, self.vnfd, self.heat,
            stack_id=self.heat.id)
        self.inst.instantiationState = 'INSTANTIATED'
        return req, grant_req, grant

    def instantiate(self):
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_start', req, grant_req, grant)
        self.hook('instantiate_end', req, grant_req, grant)
        self.reset_calls()

    def refresh(self, op, req, grant_req, grant):
        """instantiatedVnfInfo made again from Heat, as after op."""
        openstack.Openstack()._make_instantiated_vnf_info(
            req, self.inst, grant_req, grant, self.vnfd, self.heat)

    def infra(self, method, req, grant_req, grant):
        """Tacker's OpenStack infra driver's heal() or scale() on Heat."""
        real = heat_utils.HeatClient
        heat_utils.HeatClient = lambda vim_info: self.heat
        try:
            getattr(openstack.Openstack(), method)(
                req, self.inst, grant_req, grant, self.vnfd)
        finally:
            heat_utils.HeatClient = real

    def vnfcs(self, vdu):
        return [v for v in self.inst.instantiatedVnfInfo.vnfcResourceInfo
                if v.vduId == vdu]

    def vnfc_info_id(self, vnfc):
        for c in self.inst.instantiatedVnfInfo.vnfcInfo:
            if c.vnfcResourceInfoId == vnfc.id:
                return c.id

    # ---- the fake heatsible's records -----------------------------------

    def reset_calls(self):
        shutil.rmtree(os.path.join(self.fake_dir, 'calls'), True)

    def calls(self):
        d = os.path.join(self.fake_dir, 'calls')
        n = len(glob.glob(os.path.join(d, '*.argv')))
        out = []
        for i in range(1, n + 1):
            c = os.path.join(d, str(i))
            rec = {'argv': read(c + '.argv').splitlines()}
            for k in ('mode', 'dirmode', 'request', 'env', 'stdin'):
                if os.path.exists(c + '.' + k):
                    rec[k] = read(c + '.' + k)
            out.append(rec)
        return out

    def argvs(self):
        """Each call's argv from the operation on, without file paths."""
        out = []
        for c in self.calls():
            a = c['argv'][1:] if c['argv'][0] == 'run' else c['argv']
            keep = []
            skip = False
            for x in a:
                if skip:
                    skip = False
                    continue
                if x in ('--request', '--package', '--vim-info', '--save',
                         '--known-hosts', '--topology'):
                    keep.append(x)
                    skip = True
                    continue
                keep.append(x)
            out.append(keep)
        return out

    def assertFails(self, operation, req, *args, **kw):
        with self.assertRaises(sol_ex.MgmtDriverExecutionFailed) as cm:
            self.hook(operation, req, *args, **kw)
        return str(cm.exception.detail)

    def assertNoSecret(self, text):
        for s in secrets_of(params()) + [VIM_PASSWORD, TOKEN]:
            self.assertNotIn(s, text)


class InstantiateTest(V2Base):

    def test_instantiate_runs_validate_then_instantiate_end(self):
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_start', req, grant_req, grant)
        self.hook('instantiate_end', req, grant_req, grant)
        stack = self.heat.id
        self.assertEqual(self.argvs(), [
            ['validate', '--request', '--package', '-o', 'json'],
            ['instantiate-end', '--request', '--package', '--stack', stack,
             '--local', '-o', 'json', '--vim-info']])
        pkg = self.calls()[1]['argv'][self.calls()[1]['argv'].index(
            '--package') + 1]
        # Tacker's temporary copy of the package, gone after the script
        self.assertFalse(os.path.exists(pkg))

    def test_request_file_is_private_and_holds_only_the_parameters(self):
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_end', req, grant_req, grant)
        c = self.calls()[0]
        self.assertEqual((c['mode'].strip(), c['dirmode'].strip()),
                         ('600', '700'))
        self.assertEqual(json.loads(c['request']), params())
        self.assertEqual(c['stdin'], '')
        path = c['argv'][c['argv'].index('--request') + 1]
        self.assertFalse(os.path.exists(os.path.dirname(path)))
        self.assertNoSecret('\n'.join(c['argv']))

    def test_heat_is_read_with_the_vnfs_openstack_vim(self):
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_end', req, grant_req, grant)
        env = dict(l.split('=', 1)
                   for l in self.calls()[0]['env'].splitlines())
        self.assertEqual(env, {
            'OS_AUTH_URL': 'http://127.0.0.1:25000/v3',
            'OS_USERNAME': 'admin', 'OS_PROJECT_NAME': 'admin',
            'OS_USER_DOMAIN_NAME': 'Default',
            'OS_PROJECT_DOMAIN_NAME': 'Default',
            'OS_REGION_NAME': 'RegionOne', 'OS_PASSWORD': 'matches'})

    def test_environment_credentials_when_asked(self):
        os.environ['HEATSIBLE_OS_CREDENTIALS'] = 'environment'
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_end', req, grant_req, grant)
        env = self.calls()[0]['env']
        self.assertIn('OS_CLOUD=conductor-cloud', env)
        self.assertIn('OS_PASSWORD=differs', env)

    def test_kubernetes_vim_is_appended_where_tacker_will_not_take_it(self):
        self.instantiate()
        conns = self.inst.vimConnectionInfo
        self.assertEqual(list(conns), ['vim1', 'kubernetes_vim'])
        k8s = conns['kubernetes_vim']
        self.assertEqual(k8s.vimType, 'ETSINFV.KUBERNETES.V_1')
        self.assertEqual(k8s.interfaceInfo, {'endpoint': SERVER,
                                             'ssl_ca_cert': CA})
        self.assertEqual(k8s.accessInfo, {'bearer_token': TOKEN})
        self.assertEqual(k8s.extra['heatsible']['service_account'],
                         'kube-system/heatsible-tacker-vim')
        # Tacker's own choice of the VNF's VIM is still the OpenStack one
        self.assertEqual(inst_utils.select_vim_info(conns).vimType,
                         'ETSINFV.OPENSTACK_KEYSTONE.V_3')
        # and the API answer (vnflcm_view) carries no token
        from tacker.sol_refactored.controller import vnflcm_view
        shown = vnflcm_view.InstanceViewBuilder('http://t', 100).detail(
            self.inst)
        self.assertNotIn(TOKEN, json.dumps(shown))
        self.assertIn(SERVER, json.dumps(shown))

    def test_vim_without_ca_and_default_name(self):
        p = params()
        del p['k8s_cluster_installation_param']['vim_name']
        body = request('instantiate.json')
        body['additionalParams'] = p
        os.environ['FAKE_VIM'] = json.dumps(vim_doc(name=None, ca=''))
        req = objects.InstantiateVnfRequest.from_dict(body)
        grant_req, grant = self.grant_request('INSTANTIATE', req)
        openstack.Openstack()._make_instantiated_vnf_info(
            req, self.inst, grant_req, grant, self.vnfd, self.heat,
            stack_id=self.heat.id)
        self.hook('instantiate_end', req, grant_req, grant)
        key = 'kubernetes_vim_' + INST_ID
        self.assertEqual(list(self.inst.vimConnectionInfo), ['vim1', key])
        self.assertEqual(self.inst.vimConnectionInfo[key].interfaceInfo,
                         {'endpoint': SERVER})

    def test_register_vim_off(self):
        os.environ['HEATSIBLE_REGISTER_VIM'] = '0'
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_end', req, grant_req, grant)
        self.assertNotIn('--vim-info', self.argvs()[0])
        self.assertEqual(list(self.inst.vimConnectionInfo), ['vim1'])

    def test_openstack_key_that_mysql_sorts_last_is_refused_first(self):
        req, grant_req, grant = self.instantiated()
        self.inst.vimConnectionInfo = {
            'openstack_regionone': self.openstack_vim()}
        msg = self.assertFails('instantiate_start', req, grant_req, grant)
        self.assertIn('"openstack_regionone"', msg)
        self.assertIn('MySQL', msg)
        self.assertEqual(self.calls(), [])

    def test_a_key_taken_by_another_entry_is_refused(self):
        req, grant_req, grant = self.instantiated()
        self.inst.vimConnectionInfo['kubernetes_vim'] = self.openstack_vim()
        msg = self.assertFails('instantiate_end', req, grant_req, grant)
        self.assertIn('did not add', msg)
        self.assertEqual(self.calls(), [])

    def test_bad_request_is_refused_at_instantiate_start(self):
        os.environ['FAKE_RC'] = '2'
        os.environ['FAKE_STDERR'] = json.dumps({
            'ok': False, 'exit_code': 2, 'error': '1 problem',
            'problems': [{'path': 'additionalParams.k8s_cluster_installation'
                                  '_param.storage_server.nfs_server_setup_'
                                  'params[0].export_to',
                          'message': '"10.10.0.0/33" is not an IP address'}]})
        req, grant_req, grant = self.instantiated()
        msg = self.assertFails('instantiate_start', req, grant_req, grant)
        self.assertIn('exit code 2', msg)
        self.assertIn('nfs_server_setup_params[0].export_to', msg)

    def test_problems_in_the_error_are_said_once(self):
        line = ('additionalParams.k8s_cluster_installation_param.storage_'
                'server.nfs_server_setup_params[0].export_to: "10.10.0.0/33" '
                'is not an IP address')
        os.environ['FAKE_RC'] = '2'
        os.environ['FAKE_STDERR'] = json.dumps({
            'ok': False, 'exit_code': 2, 'error': line,
            'problems': [{'path': line.split(': ')[0],
                          'message': line.split(': ', 1)[1]}]})
        req, grant_req, grant = self.instantiated()
        msg = self.assertFails('instantiate_start', req, grant_req, grant)
        self.assertEqual(msg.count('is not an IP address'), 1)

    def test_failure_reaches_tacker_with_heatsibles_message_only(self):
        os.environ['FAKE_RC'] = '4'
        os.environ['FAKE_STDERR'] = json.dumps({
            'ok': False, 'exit_code': 4,
            'error': 'storage: mounting /volume failed (log: /x/run.log)'})
        req, grant_req, grant = self.instantiated()
        msg = self.assertFails('instantiate_end', req, grant_req, grant)
        self.assertIn('heatsible instantiate-end failed (exit code 4, a task '
                      'failed on at least one host): storage: mounting '
                      '/volume failed (log: /x/run.log)', msg)
        self.assertNoSecret(msg)
        # Tacker shows stderr as bytes (b'...'): one line, nothing escaped
        self.assertNotIn('\\n', msg)
        self.assertNotIn("\\'", msg)
        self.assertEqual(list(self.inst.vimConnectionInfo), ['vim1'])

    def test_missing_parameters_refused(self):
        body = request('instantiate.json')
        del body['additionalParams']
        req = objects.InstantiateVnfRequest.from_dict(body)
        grant_req, grant = self.grant_request('INSTANTIATE', req)
        msg = self.assertFails('instantiate_start', req, grant_req, grant)
        self.assertIn('k8s_cluster_installation_param is missing', msg)

    def test_ansible_host_from_the_request(self):
        body = request('instantiate.json')
        body['additionalParams']['k8s_cluster_installation_param'][
            'ansible'] = {'ip_address': '10.231.0.10', 'username': 'ubuntu',
                          'password': 'ansible-pw'}
        os.environ['HEATSIBLE_KNOWN_HOSTS'] = '/etc/heatsible/known_hosts'
        req = objects.InstantiateVnfRequest.from_dict(body)
        grant_req, grant = self.grant_request('INSTANTIATE', req)
        openstack.Openstack()._make_instantiated_vnf_info(
            req, self.inst, grant_req, grant, self.vnfd, self.heat,
            stack_id=self.heat.id)
        self.hook('instantiate_end', req, grant_req, grant)
        argv = self.argvs()[0]
        self.assertNotIn('--local', argv)
        self.assertIn('--known-hosts', argv)
        self.assertNotIn('--wait', argv)
        self.assertNotIn('ansible-pw', '\n'.join(self.calls()[0]['argv']))

    def test_wait_from_the_environment(self):
        body = request('instantiate.json')
        os.environ['HEATSIBLE_WAIT'] = 'cloud-init=20m'
        req = objects.InstantiateVnfRequest.from_dict(body)
        grant_req, grant = self.grant_request('INSTANTIATE', req)
        openstack.Openstack()._make_instantiated_vnf_info(
            req, self.inst, grant_req, grant, self.vnfd, self.heat,
            stack_id=self.heat.id)
        self.hook('instantiate_end', req, grant_req, grant)
        argv = self.argvs()[0]
        self.assertEqual(argv[argv.index('--wait') + 1], 'cloud-init=20m')


class HealTest(V2Base):

    def heal(self, body):
        req = objects.HealVnfRequest.from_dict(body)
        grant_req, grant = self.grant_request('HEAL', req)
        return req, grant_req, grant

    def heal_body(self, vnfcs, **extra):
        body = {'vnfcInstanceId': [self.vnfc_info_id(v) for v in vnfcs],
                'additionalParams': params()}
        body['additionalParams'].update(extra)
        return body

    def test_heal_of_a_worker_names_its_member_stack_at_both_ends(self):
        self.instantiate()
        worker = self.vnfcs('workerNode')[0]
        old_server = worker.computeResource.resourceId
        member = v2._stack_uuid(worker.metadata['stack_id'])
        req, grant_req, grant = self.heal(self.heal_body([worker]))
        data = self.hook('heal_start', req, grant_req, grant)
        self.infra('heal', req, grant_req, grant)
        self.hook('heal_end', req, grant_req, grant, data)
        self.assertEqual(self.argvs(), [
            ['heal-start', '--node', member, '--request', '--package',
             '--stack', self.heat.id, '--local', '-o', 'json'],
            ['heal-end', '--node', member, '--request', '--package',
             '--stack', self.heat.id, '--local', '-o', 'json']])
        # Heat replaced the server in the same member stack
        new = [v for v in self.vnfcs('workerNode')
               if v2._stack_uuid(v.metadata['stack_id']) == member]
        self.assertEqual(len(new), 1)
        self.assertNotEqual(new[0].computeResource.resourceId, old_server)
        self.assertEqual(self.heat.deleted_volumes, [])

    def test_heal_of_the_storage_server_keeps_its_volume(self):
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        volume = self.heat.storage['volume']
        req, grant_req, grant = self.heal(self.heal_body([storage]))
        self.assertEqual([r.type for r in grant_req.removeResources],
                         ['COMPUTE'])
        data = self.hook('heal_start', req, grant_req, grant)
        self.infra('heal', req, grant_req, grant)
        self.hook('heal_end', req, grant_req, grant, data)
        self.assertEqual([a[:2] for a in self.argvs()],
                         [['heal-start', '--storage-server'],
                          ['heal-end', '--storage-server']])
        self.assertEqual(self.heat.storage['volume'], volume)
        self.assertEqual(self.heat.deleted_volumes, [])

    def test_the_storage_server_is_told_by_its_cp_not_its_vdu_name(self):
        # as Tacker's kubernetes_mgmt.py: storage_server.nic_cp_name
        os.environ['HEATSIBLE_STORAGE_VDU_IDS'] = 'nfs_server'
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        req, grant_req, grant = self.heal(self.heal_body([storage]))
        self.hook('heal_start', req, grant_req, grant)
        self.assertEqual(self.argvs()[0][:2],
                         ['heal-start', '--storage-server'])

    def test_tacker_recreates_the_storage_servers_volume_with_all_true(self):
        # What Tacker's v2 heal does (no heatsible involved): with
        # additionalParams.all=true the VNFC's storage is in the grant's
        # removeResources and marked unhealthy, so Heat re-creates it.
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        volume = self.heat.storage['volume']
        req, grant_req, grant = self.heal(self.heal_body([storage],
                                                         all=True))
        self.assertEqual(sorted(r.type for r in grant_req.removeResources),
                         ['COMPUTE', 'STORAGE'])
        self.infra('heal', req, grant_req, grant)
        self.assertIn(('mark_unhealthy', 'vnf-%s/%s' % (INST_ID,
                                                        self.heat.id),
                       'storage_server_volume'), self.heat.calls)
        self.assertEqual(self.heat.deleted_volumes, [volume])

    def test_heal_of_the_storage_server_with_all_true_is_refused(self):
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        volume = self.heat.storage['volume']
        req, grant_req, grant = self.heal(self.heal_body([storage],
                                                         all=True))
        data = {}
        msg = self.assertFails('heal_start', req, grant_req, grant, data)
        self.assertIn('storage_server_volume (%s)' % volume, msg)
        self.assertIn('without "all" (or with "all": false)', msg)
        self.assertEqual(self.calls(), [])  # heatsible never ran
        # nothing marked, nothing re-created: Tacker stops at heal_start
        self.assertEqual(self.heat.deleted_volumes, [])

    def test_all_as_any_true_value_is_refused_as_tacker_reads_it(self):
        # Tacker: req.additionalParams.get('all', False), Python truth
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        for value in ('false', 1, ['x']):
            req, grant_req, grant = self.heal(self.heal_body([storage],
                                                             all=value))
            self.assertIn('STORAGE', [r.type for r in
                                      grant_req.removeResources])
            self.assertFails('heal_start', req, grant_req, grant)
        req, grant_req, grant = self.heal({'additionalParams':
                                           dict(params(), all='no')})
        self.assertFails('heal_start', req, grant_req, grant)
        self.assertEqual(self.calls(), [])

    def test_released_pvs_acknowledged_by_the_request(self):
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        worker = self.vnfcs('workerNode')[0]
        req, grant_req, grant = self.heal(self.heal_body(
            [storage, worker], heatsible_delete_released=True))
        data = self.hook('heal_start', req, grant_req, grant)
        self.infra('heal', req, grant_req, grant)
        self.hook('heal_end', req, grant_req, grant, data)
        self.assertEqual([a[:3] for a in self.argvs()], [
            ['heal-start', '--storage-server', '--delete-released'],
            ['heal-start', '--node', v2._stack_uuid(
                worker.metadata['stack_id'])],
            ['heal-end', '--storage-server', '--request'],
            ['heal-end', '--node', v2._stack_uuid(
                worker.metadata['stack_id'])]])

    def test_released_pvs_acknowledged_only_by_a_json_boolean(self):
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        req, grant_req, grant = self.heal(self.heal_body(
            [storage], heatsible_delete_released='true'))
        msg = self.assertFails('heal_start', req, grant_req, grant)
        self.assertIn('want a JSON boolean', msg)
        self.assertEqual(self.calls(), [])

    def test_all_true_refused_also_when_workers_come_with_it(self):
        self.instantiate()
        vnfcs = self.vnfcs('workerNode')[:1] + self.vnfcs('storage_server')
        req, grant_req, grant = self.heal(self.heal_body(vnfcs, all=True))
        self.assertFails('heal_start', req, grant_req, grant)
        self.assertEqual(self.calls(), [])

    def test_all_true_for_a_worker_alone_runs(self):
        self.instantiate()
        worker = self.vnfcs('workerNode')[0]
        req, grant_req, grant = self.heal(self.heal_body([worker], all=True))
        self.hook('heal_start', req, grant_req, grant)
        self.assertEqual(self.argvs()[0][:1], ['heal-start'])

    def test_a_bound_claim_refuses_the_heal_before_heat_acts(self):
        self.instantiate()
        storage = self.vnfcs('storage_server')[0]
        os.environ['FAKE_RC'] = '6'
        os.environ['FAKE_STDERR'] = json.dumps({
            'ok': False, 'exit_code': 6, 'error':
                'PersistentVolume nfs-pv1 is Bound to claim default/data-0: '
                'delete the claim first; nothing was deleted'})
        req, grant_req, grant = self.heal(self.heal_body([storage]))
        data = {}
        msg = self.assertFails('heal_start', req, grant_req, grant, data)
        self.assertIn('exit code 6, refused for safety', msg)
        self.assertIn('nfs-pv1 is Bound to claim default/data-0', msg)
        # the record goes back to Tacker also on failure (for a retry)
        self.assertTrue(data[v2.HEAL_RECORD]['storage_server'])

    def test_storage_first_then_one_run_per_node(self):
        self.instantiate()
        workers = self.vnfcs('workerNode')
        storage = self.vnfcs('storage_server')[0]
        members = [v2._stack_uuid(w.metadata['stack_id']) for w in workers]
        req, grant_req, grant = self.heal(
            self.heal_body(workers + [storage]))
        self.hook('heal_start', req, grant_req, grant)
        self.assertEqual([a[:3] for a in self.argvs()], [
            ['heal-start', '--storage-server', '--request'],
            ['heal-start', '--node', members[0]],
            ['heal-start', '--node', members[1]]])

    def test_first_failure_stops_and_says_which_runs_were_done(self):
        self.instantiate()
        workers = self.vnfcs('workerNode')
        os.environ['FAKE_RC'] = '4'
        os.environ['FAKE_FAIL_AT'] = '2'
        req, grant_req, grant = self.heal(self.heal_body(workers))
        msg = self.assertFails('heal_start', req, grant_req, grant)
        self.assertIn('(run 2 of 2; done: --node %s)' % v2._stack_uuid(
            workers[0].metadata['stack_id']), msg)
        self.assertEqual(len(self.calls()), 2)

    def test_heal_end_without_heal_start_says_so(self):
        self.instantiate()
        worker = self.vnfcs('workerNode')[0]
        req, grant_req, grant = self.heal(self.heal_body([worker]))
        msg = self.assertFails('heal_end', req, grant_req, grant, {})
        self.assertIn('declare heal_start', msg)

    def test_heal_without_parameters_is_refused(self):
        self.instantiate()
        worker = self.vnfcs('workerNode')[0]
        req, grant_req, grant = self.heal(
            {'vnfcInstanceId': [self.vnfc_info_id(worker)]})
        msg = self.assertFails('heal_start', req, grant_req, grant)
        self.assertIn('k8s_cluster_installation_param is missing', msg)
        self.assertEqual(self.calls(), [])

    def test_heal_of_the_whole_vnf(self):
        self.instantiate()
        req, grant_req, grant = self.heal({'additionalParams': params()})
        data = self.hook('heal_start', req, grant_req, grant)
        self.assertEqual(list(self.inst.vimConnectionInfo), ['vim1'])
        self.infra('heal', req, grant_req, grant)
        os.environ['FAKE_VIM'] = json.dumps(vim_doc(token='new-token'))
        self.hook('heal_end', req, grant_req, grant, data)
        self.assertEqual([a[:2] for a in self.argvs()],
                         [['heal-start', '--cluster'],
                          ['heal-end', '--cluster']])
        self.assertIn('--vim-info', self.argvs()[1])
        conns = self.inst.vimConnectionInfo
        self.assertEqual(list(conns), ['vim1', 'kubernetes_vim'])
        self.assertEqual(conns['kubernetes_vim'].accessInfo,
                         {'bearer_token': 'new-token'})
        self.assertEqual(self.heat.deleted_volumes, [])

    def test_heal_of_the_whole_vnf_with_all_true_is_refused(self):
        self.instantiate()
        req, grant_req, grant = self.heal(
            {'additionalParams': dict(params(), all=True)})
        msg = self.assertFails('heal_start', req, grant_req, grant)
        self.assertIn('delete the Heat stack', msg)
        self.assertIn('storage_server_volume', msg)
        self.assertEqual(self.calls(), [])
        self.assertEqual(list(self.inst.vimConnectionInfo),
                         ['vim1', 'kubernetes_vim'])

    def test_tacker_deletes_the_stack_with_all_true(self):
        self.instantiate()
        volume = self.heat.storage['volume']
        req, grant_req, grant = self.heal(
            {'additionalParams': dict(params(), all=True)})
        self.infra('heal', req, grant_req, grant)
        names = [c[0] for c in self.heat.calls]
        self.assertLess(names.index('delete_stack'),
                        names.index('create_stack'))
        self.assertIn(volume, self.heat.deleted_volumes)

    def test_a_reordered_vim_is_put_back_before_tacker_acts(self):
        self.instantiate()
        conns = self.inst.vimConnectionInfo
        # as a MySQL JSON column may give it back
        self.inst.vimConnectionInfo = {'kubernetes_vim':
                                       conns['kubernetes_vim'],
                                       'vim1': conns['vim1']}
        worker = self.vnfcs('workerNode')[0]
        req, grant_req, grant = self.heal(self.heal_body([worker]))
        self.hook('heal_start', req, grant_req, grant)
        self.assertEqual(list(self.inst.vimConnectionInfo),
                         ['vim1', 'kubernetes_vim'])
        self.assertEqual(
            inst_utils.select_vim_info(self.inst.vimConnectionInfo).vimType,
            'ETSINFV.OPENSTACK_KEYSTONE.V_3')


class ScaleTest(V2Base):

    def scale(self, kind, aspect='worker_instance'):
        body = {'type': kind, 'aspectId': aspect, 'numberOfSteps': 1,
                'additionalParams': params()}
        req = objects.ScaleVnfRequest.from_dict(body)
        grant_req, grant = self.grant_request('SCALE', req)
        return req, grant_req, grant

    def test_scale_out_joins_the_new_worker(self):
        self.instantiate()
        before = set(self.heat.servers('worker_instance'))
        req, grant_req, grant = self.scale('SCALE_OUT')
        data = self.hook('scale_start', req, grant_req, grant)
        self.assertEqual(self.calls(), [])
        self.infra('scale', req, grant_req, grant)
        self.hook('scale_end', req, grant_req, grant, data)
        new = set(self.heat.servers('worker_instance')) - before
        self.assertEqual(len(new), 1)
        self.assertEqual(self.argvs(), [
            ['scale-end', '--nodes', new.pop(), '--request', '--package',
             '--stack', self.heat.id, '--local', '-o', 'json']])

    def test_scale_out_also_joins_a_member_heat_replaced_with_it(self):
        # a member left marked unhealthy (e.g. by a heal that failed in
        # Heat) is replaced by the same stack update that adds the new one:
        # two fresh VMs, both joined (Tacker's newest-N would take one)
        self.instantiate()
        before = set(self.heat.servers('worker_instance'))
        g = self.heat.groups['worker_instance']
        self.heat.mark_unhealthy(g['members'][0]['stack'] + '/' +
                                 g['members'][0]['id'], 'workerNode')
        req, grant_req, grant = self.scale('SCALE_OUT')
        data = self.hook('scale_start', req, grant_req, grant)
        self.infra('scale', req, grant_req, grant)
        self.hook('scale_end', req, grant_req, grant, data)
        new = set(self.heat.servers('worker_instance')) - before
        self.assertEqual(len(new), 2)
        argv = self.argvs()[0]
        self.assertEqual(argv[:2], ['scale-end', '--nodes'])
        self.assertEqual(set(argv[2].split(',')), new)

    def test_scale_out_without_scale_start_takes_tackers_newest(self):
        self.instantiate()
        before = set(self.heat.servers('worker_instance'))
        req, grant_req, grant = self.scale('SCALE_OUT')
        self.infra('scale', req, grant_req, grant)
        self.hook('scale_end', req, grant_req, grant, {})
        new = set(self.heat.servers('worker_instance')) - before
        self.assertEqual(self.argvs()[0][:3], ['scale-end', '--nodes',
                                               new.pop()])

    def test_scale_in_drains_the_workers_tacker_removes(self):
        self.instantiate()
        req, grant_req, grant = self.scale('SCALE_OUT')
        data = self.hook('scale_start', req, grant_req, grant)
        self.infra('scale', req, grant_req, grant)
        self.hook('scale_end', req, grant_req, grant, data)
        self.reset_calls()
        req, grant_req, grant = self.scale('SCALE_IN')
        victims = [r.resource.resourceId for r in grant_req.removeResources
                   if r.type == 'COMPUTE']
        self.hook('scale_start', req, grant_req, grant)
        self.assertEqual(self.argvs(), [
            ['scale-start', '--nodes', ','.join(victims), '--request',
             '--package', '--stack', self.heat.id, '--local', '-o', 'json']])
        self.infra('scale', req, grant_req, grant)
        # Heat removed exactly the workers heatsible drained
        self.assertFalse(set(victims) &
                         set(self.heat.servers('worker_instance')))
        self.hook('scale_end', req, grant_req, grant)
        self.assertEqual(len(self.calls()), 1)

    def test_scale_of_masters_is_refused_before_heat_adds_them(self):
        self.instantiate()
        req, grant_req, grant = self.scale('SCALE_OUT', 'master_instance')
        msg = self.assertFails('scale_start', req, grant_req, grant)
        self.assertIn('master VDU masterNode', msg)
        self.assertEqual(self.calls(), [])

    def test_scale_rollback_drains_what_heat_added(self):
        self.instantiate()
        before = set(self.heat.servers('worker_instance'))
        req, grant_req, grant = self.scale('SCALE_OUT')
        saved = copy.deepcopy(self.inst.instantiatedVnfInfo)
        self.infra('scale', req, grant_req, grant)
        new = (set(self.heat.servers('worker_instance')) - before).pop()
        # the rollback gets the instance as it was before (not saved)
        self.inst.instantiatedVnfInfo = saved
        nodes = [{'name': 'workernode-' + m['name'], 'role': 'worker',
                  'server_id': m['server']}
                 for m in self.heat.groups['worker_instance']['members']]
        os.environ['FAKE_STDOUT'] = json.dumps({'cluster': 'vnf-x',
                                                'nodes': nodes})
        self.hook('scale_rollback_start', req, grant_req, grant)
        self.assertEqual([a[:3] for a in self.argvs()], [
            ['topology', '--request', '--stack'],
            ['scale-start', '--nodes', new]])


class TerminateTest(V2Base):

    def tacker_terminate(self, req):
        """What Tacker's conductor does between terminate_start and
        terminate_end (VnfLcmDriverV2.terminate_process): the stack
        deleted, instantiatedVnfInfo reset, vimConnectionInfo emptied."""
        lcmocc = objects.VnfLcmOpOccV2(operation='TERMINATE',
                                        operationParams=req)
        real = heat_utils.HeatClient
        heat_utils.HeatClient = lambda vim_info: self.heat
        try:
            self.driver.terminate_process(None, lcmocc, self.inst, None,
                                          None, self.vnfd)
        finally:
            heat_utils.HeatClient = real

    def test_terminate_saves_the_topology_then_cleans_up_with_it(self):
        self.instantiate()
        body = {'terminationType': 'FORCEFUL', 'additionalParams': params()}
        req = objects.TerminateVnfRequest.from_dict(body)
        self.hook('terminate_start', req)
        path = os.path.join(self.dir, 'state', 'tacker-topology',
                            INST_ID + '.topology.yaml')
        self.assertTrue(os.path.exists(path))
        self.tacker_terminate(req)
        # seen on the bed's Tacker: terminate_end failed asking for the
        # OpenStack VIM's credentials, which Tacker had just removed
        self.assertEqual(self.inst.vimConnectionInfo, {})
        self.hook('terminate_end', req)
        env = dict(l.split('=', 1)
                   for l in self.calls()[1]['env'].splitlines())
        self.assertEqual(env, {})  # no Heat read: no credentials given
        self.assertEqual(self.argvs(), [
            ['topology', '--request', '--stack', self.heat.id, '--save',
             '-o', 'json'],
            ['terminate-end', '--request', '--package', '--topology',
             '--local', '-o', 'json']])
        self.assertFalse(os.path.exists(path))

    def test_terminate_without_parameters_does_not_stop_tacker(self):
        self.instantiate()
        req = objects.TerminateVnfRequest.from_dict(
            {'terminationType': 'FORCEFUL'})
        self.hook('terminate_start', req)
        self.hook('terminate_end', req)
        self.assertEqual(self.calls(), [])

    def test_terminate_start_failure_does_not_stop_tacker(self):
        self.instantiate()
        os.environ['FAKE_RC'] = '5'
        body = {'terminationType': 'FORCEFUL', 'additionalParams': params()}
        req = objects.TerminateVnfRequest.from_dict(body)
        self.hook('terminate_start', req)
        self.hook('terminate_end', req)
        self.assertEqual([a[0] for a in self.argvs()], ['topology'])

    def test_instantiate_rollback_cleans_up_by_the_stack_name(self):
        req, grant_req, grant = self.instantiated()
        # the failed instantiation was not saved: no stack id in the DB
        self.inst.instantiatedVnfInfo = (
            objects.VnfInstanceV2_InstantiatedVnfInfo(
                flavourId='simple', vnfState='STOPPED'))
        self.hook('instantiate_rollback_start', req, grant_req, grant)
        self.hook('instantiate_rollback_end', req, grant_req, grant)
        self.assertEqual([a[:4] for a in self.argvs()], [
            ['topology', '--request', '--stack', 'vnf-' + INST_ID],
            ['terminate-end', '--request', '--package', '--topology']])


class PackageTest(V2Base):

    def test_tacker_onboards_the_package(self):
        # what Tacker's package upload runs (csar_utils.load_csar_data)
        from tacker.common import csar_utils
        from tacker.tosca import utils as toscautils
        from toscaparser.tosca_template import ToscaTemplate
        import logging
        zip_path = os.path.join(self.dir, 'pv.zip')
        make_csar.build(zip_path)
        # Tacker 16.0.0 logs a missing etc/etsi-nfv/sol001 copy with a
        # broken format string ("... '%'"); the package carries the files
        raise_exc = logging.raiseExceptions
        logging.raiseExceptions = False
        self.addCleanup(setattr, logging, 'raiseExceptions', raise_exc)
        tosca = ToscaTemplate(zip_path, None, True,
                              local_defs=toscautils.tosca_tmpl_local_defs())
        # tosca-parser leaves the zip extracted in a temporary directory
        extracted = tosca.path[:-len('Definitions/heatsible_pv_top.vnfd'
                                     '.yaml')]
        self.assertTrue(os.path.isfile(os.path.join(
            extracted, 'TOSCA-Metadata', 'TOSCA.meta')))
        self.addCleanup(shutil.rmtree, extracted, True)
        vnf, flavours, _ = csar_utils._get_data_from_csar(tosca, None, 'p')
        self.assertEqual(vnf['descriptor_id'], VNFD_ID)
        self.assertEqual([f['flavour_id'] for f in flavours], ['simple'])

    def test_the_package_carries_the_script_byte_for_byte(self):
        with open(os.path.join(HERE, 'heatsible_vnflcm_v2.py'), 'rb') as a, \
                open(os.path.join(self.csar, 'Scripts',
                                  'heatsible_vnflcm_v2.py'), 'rb') as b:
            self.assertEqual(a.read(), b.read())

    def test_every_hook_of_the_vnfd_runs_the_script(self):
        for op in ('instantiate_start', 'instantiate_end', 'heal_start',
                   'heal_end', 'scale_start', 'scale_end',
                   'scale_rollback_start', 'terminate_start',
                   'terminate_end', 'instantiate_rollback_start',
                   'instantiate_rollback_end', 'modify_information_start',
                   'change_external_connectivity_start'):
            self.assertEqual(self.vnfd.get_interface_script('simple', op),
                             '../Scripts/heatsible_vnflcm_v2.py', op)


REAL_BIN = os.environ.get('HEATSIBLE_REAL_BIN')


@unittest.skipUnless(REAL_BIN, 'HEATSIBLE_REAL_BIN is not set: the hooks '
                     'against the real heatsible binary are not run '
                     '(scripts/test-tacker-v2.sh sets it to bin/heatsible)')
class RealHeatsibleTest(V2Base):
    """The hooks against the real binary, with no OpenStack to reach.

    Each hook that reads Heat ends with exit code 5 (heatsible accepted
    its flags and target; a wrong argv is 2); instantiate_start's validate
    passes for the package's own request.
    """

    def setUp(self):
        super().setUp()
        os.environ['HEATSIBLE_BIN'] = REAL_BIN
        self.inst.vimConnectionInfo['vim1'].interfaceInfo['endpoint'] = \
            'http://127.0.0.1:1/v3'

    def test_validate_accepts_the_packages_request(self):
        req, grant_req, grant = self.instantiated()
        self.hook('instantiate_start', req, grant_req, grant)

    def assertHeatUnreachable(self, msg):
        self.assertIn('exit code 5', msg)
        self.assertIn('127.0.0.1:1', msg)

    def test_hooks_reach_heat(self):
        req, grant_req, grant = self.instantiated()
        self.assertHeatUnreachable(self.assertFails(
            'instantiate_end', req, grant_req, grant))
        vnfcs = self.inst.instantiatedVnfInfo.vnfcResourceInfo
        for vnfc in vnfcs:
            body = {'vnfcInstanceId': [self.vnfc_info_id(vnfc)],
                    'additionalParams': params()}
            hreq = objects.HealVnfRequest.from_dict(body)
            greq, g = self.grant_request('HEAL', hreq)
            self.assertHeatUnreachable(self.assertFails(
                'heal_start', hreq, greq, g))
        hreq = objects.HealVnfRequest.from_dict({'additionalParams':
                                                 params()})
        greq, g = self.grant_request('HEAL', hreq)
        self.assertHeatUnreachable(self.assertFails('heal_start', hreq,
                                                    greq, g))
        sreq = objects.ScaleVnfRequest.from_dict({
            'type': 'SCALE_IN', 'aspectId': 'worker_instance',
            'numberOfSteps': 1, 'additionalParams': params()})
        greq, g = self.grant_request('SCALE', sreq)
        self.assertHeatUnreachable(self.assertFails('scale_start', sreq,
                                                    greq, g))


if __name__ == '__main__':
    unittest.main()
