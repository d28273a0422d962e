"""The shim against Tacker's real classes (skipped unless TACKER_SRC is set).

Not run by CI: it needs a checkout of openstack/tacker and its Python
dependencies. On Debian 12 they come from Debian's packages (README.md,
"Checked against Tacker's real classes"):

    TACKER_SRC=/path/to/tacker [TACKER_EXTRA_PATH=/path/to/dir] \\
        /usr/bin/python3 -m unittest -v test_real_tacker

TACKER_SRC must hold Tacker's samples/mgmt_driver/kubernetes/
kubernetes_mgmt.py copied to tacker/vnfm/mgmt_drivers/, as Tacker's
Kubernetes guide installs it. TACKER_EXTRA_PATH goes first on sys.path (for
a tosca-parser with its TOSCA definition files, which Debian's
python3-tosca-parser 2.6.0-2 lacks).

What runs for real: Tacker's abstract MgmtDriver and exceptions, Tacker's
KubernetesMgmtDriver hooks (instantiate_end, heal_start, heal_end,
scale_end) with only their SSH/Heat helpers replaced by recorders, and
Tacker's NFVO plugin and VIM database (sqlite in memory) under the shim's
TackerVims. Nothing leaves the machine: heatsible is shim_fakes' fake.
"""

import importlib.util
import inspect
import os
import sys
import unittest
from unittest import mock

SRC = os.environ.get('TACKER_SRC')
if SRC:
    sys.path[:0] = [p for p in (os.environ.get('TACKER_EXTRA_PATH'), SRC)
                    if p]
# Or the installed Tacker: the bed's venv (testbed/tacker/tacker.sh), where CI
# runs this file with the venv's python (scripts/test-all.sh).
HAVE_TACKER = bool(SRC) or importlib.util.find_spec('tacker') is not None

import heatsible_mgmt_driver as shim  # noqa: E402
from shim_fakes import (CONTEXT, PARAMS, SERVER, TOKEN,  # noqa: E402
                        FakeHeatsibleCase, Obj, vim_doc, vnfc)


@unittest.skipUnless(HAVE_TACKER, 'no Tacker: run with the bed\'s Tacker venv '
                     '(testbed/tacker/tacker.sh venv) or set TACKER_SRC')
class RealTackerTest(FakeHeatsibleCase):

    @classmethod
    def setUpClass(cls):
        from oslo_db import options as db_options
        import tacker.conf
        db_options.set_defaults(tacker.conf.CONF, connection='sqlite://')
        tacker.conf.CONF([], project='tacker')
        from tacker.db import api as db_api
        from tacker.db import model_base
        import tacker.db.nfvo.nfvo_db  # noqa: F401
        import tacker.db.vnfm.vnfm_db  # noqa: F401
        model_base.BASE.metadata.create_all(db_api.get_engine())
        # Tacker's sample driver is not in its wheel: the kubeadm variant's
        # tests need TACKER_SRC (with it copied where Tacker's guide puts it)
        try:
            from tacker.vnfm.mgmt_drivers import kubernetes_mgmt
        except ImportError:
            cls.k8s = cls.kubeadm = None
        else:
            cls.k8s = kubernetes_mgmt
            import heatsible_kubeadm_mgmt_driver as kubeadm
            cls.kubeadm = kubeadm

    def setUp(self):
        super().setUp()
        if self.k8s is None and self._testMethodName in NEEDS_SAMPLE:
            self.skipTest('Tacker\'s samples/mgmt_driver/kubernetes/kubernetes_mgmt.py '
                          'is not installed (not in the wheel): set TACKER_SRC')

    # ---- the shim itself -------------------------------------------------

    def test_heal_block_storage_toggle_is_tackers(self):
        # The shim decides a storage heal's volume replacement with
        # Tacker's options and Tacker's expression: both checked here.
        from oslo_config import cfg
        from tacker.vnfm.infra_drivers.openstack import openstack
        d = shim.HeatsibleMgmtDriver()
        key, default, where = d._block_storage_conf()
        self.assertEqual(key, cfg.CONF.vnf_lcm.heal_include_block_storage_key)
        self.assertEqual(key, 'tacker_extension_heal_include_block_storage')
        self.assertIs(default, cfg.CONF.vnf_lcm.heal_vnfc_block_storage)
        self.assertIs(default, True)
        self.assertIn('[vnf_lcm] heal_vnfc_block_storage', where)
        # heal_vnf is wrapped by @log.log: read the module's text
        src = ' '.join(inspect.getsource(openstack).replace('\\\n', ' ').split())
        self.assertIn('if heal_vnf_request.additional_params.get( '
                      'CONF.vnf_lcm.heal_include_block_storage_key, '
                      'CONF.vnf_lcm.heal_vnfc_block_storage): '
                      '# Get storage resources for resource_name, resource_id in '
                      '_get_storage_resources(vnfc_resource):', src)
        self.assertIn('for storage_id in vnfc_resource.storage_resource_ids:', src)

    def test_conductor_backend_is_not_eventlet(self):
        # Tacker 16's tacker-conductor selects oslo.service's threading
        # backend and does not monkey-patch: the shim's subprocess, signal
        # and timeout handling runs on plain threads there (only
        # tacker-server is eventlet-patched).
        path = os.path.join(os.path.dirname(importlib.util.find_spec(
            'tacker').origin), 'cmd', 'conductor.py')
        if not os.path.exists(path):
            self.skipTest('a Tacker whose conductor is tacker.cmd.eventlet.conductor')
        with open(path) as f:
            src = f.read()
        self.assertIn('backend.init_backend(backend.BackendType.THREADING)', src)
        self.assertNotIn('monkey_patch', src)

    def test_the_shim_is_a_complete_tacker_mgmt_driver(self):
        from tacker.vnfm.mgmt_drivers import vnflcm_abstract_driver as a
        import inspect
        base = a.VnflcmMgmtAbstractDriver
        self.assertIs(shim._Base, base)
        shim.HeatsibleMgmtDriver()  # abc: every abstract method is there
        for name in sorted(base.__abstractmethods__):
            self.assertEqual(
                list(inspect.signature(getattr(base, name)).parameters),
                list(inspect.signature(
                    getattr(shim.HeatsibleMgmtDriver, name)).parameters),
                name)

    def test_failures_are_tackers_mgmt_driver_errors(self):
        from tacker.common import exceptions
        with self.assertRaises(exceptions.MgmtDriverOtherError) as cm:
            shim._raise('heatsible x failed (exit code 4, ...): boom')
        self.assertIn('heatsible x failed', str(cm.exception))

    # ---- the VIM registry on Tacker's NFVO plugin and database ----------

    def nfvo(self):
        from tacker.nfvo.nfvo_plugin import NfvoPlugin
        plugin = NfvoPlugin.__new__(NfvoPlugin)  # no stevedore drivers
        plugin._vim_drivers = mock.Mock()  # register_vim: talks to the API
        return plugin

    def context(self, project='project-1'):
        from tacker import context
        return context.Context('user-1', project, is_admin=False)

    def test_tacker_vims_on_the_real_nfvo_plugin(self):
        from tacker.common import exceptions
        from tacker import objects
        objects.register_all()
        vims = shim.TackerVims()
        vims._plugin = self.nfvo()
        ctx = self.context()
        self.assertEqual(vims.find(ctx, 'kubernetes_vim'), [])
        # the shim's whole registration, on Tacker's plugin and DB
        driver = shim.HeatsibleMgmtDriver()
        driver.vims = vims
        inst = Obj(id='vnf-1', vim_connection_info=[], saves=0)
        inst.save = lambda: setattr(inst, 'saves', inst.saves + 1)
        params = {'k8s_cluster_installation_param': {
            'vim_name': 'kubernetes_vim'}}
        vim_id = driver._register_vim(ctx, inst, params,
                                      vim_doc('kubernetes_vim'), 'test')
        found = vims.find(ctx, 'kubernetes_vim')
        self.assertEqual([(v['id'], v['auth_url'], v['type'])
                          for v in found],
                         [(vim_id, SERVER, 'kubernetes')])
        self.assertEqual(found[0]['extra']['heatsible_vnf_instance_id'],
                         'vnf-1')
        self.assertEqual(found[0]['vim_project'], {'name': 'default'})
        entry = inst.vim_connection_info[0]
        self.assertIsInstance(entry, objects.VimConnectionInfo)
        self.assertEqual((entry.vim_id, entry.vim_type, entry.access_info),
                         (vim_id, 'kubernetes', {'auth_url': SERVER}))
        # a re-run changes nothing
        driver._register_vim(ctx, inst, params, vim_doc('kubernetes_vim'),
                             'test')
        self.assertEqual(inst.saves, 1)
        # Tacker itself refuses a second VIM of that name in the project...
        with self.assertRaises(exceptions.DuplicateEntity):
            vims.create(ctx, {'vim': {
                'name': 'kubernetes_vim', 'auth_url': SERVER,
                'vim_project': {'name': 'default'},
                'auth_cred': {'bearer_token': TOKEN}, 'type': 'kubernetes',
                'tenant_id': 'project-1'}})
        # ... the shim refuses it for another VNF, before creating anything
        other = Obj(id='vnf-2', vim_connection_info=[])
        with self.assertRaises(Exception) as cm:
            driver._refuse_foreign_vim(ctx, other, params, 'test')
        self.assertIn('for another cluster (VIM %s' % vim_id,
                      str(cm.exception))
        # another project may use the name
        self.assertEqual(vims.find(self.context('project-2'),
                                   'kubernetes_vim'), [])
        # removal: Tacker's soft delete, and the entry goes
        driver._unregister_vim(ctx, inst, params, 'test')
        self.assertEqual(vims.find(ctx, 'kubernetes_vim'), [])
        self.assertEqual(inst.vim_connection_info, [])

    # ---- the kubeadm variant on Tacker's KubernetesMgmtDriver -----------

    def test_check_base_accepts_tackers_driver(self):
        self.assertEqual(self.kubeadm.check_base(
            self.k8s.KubernetesMgmtDriver), [])
        self.assertTrue(issubclass(self.kubeadm.HeatsibleKubeadmMgmtDriver,
                                   self.k8s.KubernetesMgmtDriver))

    def variant(self):
        """The variant on Tacker's real class; SSH and Heat replaced."""
        patches = [
            mock.patch.object(self.k8s, 'NfvoPlugin'),
            mock.patch.object(self.k8s.hc, 'HeatClient'),
            mock.patch.object(self.k8s.vnflcm_utils,
                              '_get_vnf_package_path',
                              return_value='/srv/pkg'),
            # Tacker's own SSH/SFTP must never be reached: a storage step
            # the variant failed to take over fails here, connecting
            # nowhere
            mock.patch.object(self.k8s.cmd_executer, 'RemoteCommandExecutor',
                              side_effect=AssertionError(
                                  'Tacker\'s driver opened SSH')),
            mock.patch.object(self.k8s.paramiko, 'Transport',
                              side_effect=AssertionError(
                                  'Tacker\'s driver opened SFTP')),
            mock.patch.object(self.k8s.time, 'sleep'),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        d = self.kubeadm.HeatsibleKubeadmMgmtDriver()
        d._hs.vims = None
        self.tacker = []
        vm = {'ssh': {'username': 'ubuntu', 'password': 'pw',
                      'ipaddr': '192.0.2.11', 'nic_ip': '192.0.2.11'},
              'k8s_cluster': {'ipaddr': '192.0.2.11'}}

        def rec(name, ret=None):
            def f(*args, **kwargs):
                self.tacker.append(name)
                self.event(name)
                return ret
            return f
        d._get_vim_connection_info = rec(
            '_get_vim_connection_info', Obj(access_info={}))
        d._get_install_info_for_k8s_node = rec(
            '_get_install_info_for_k8s_node', [vm])
        d._install_k8s_cluster = rec(
            '_install_k8s_cluster', (SERVER, TOKEN, 'CA', '', []))
        d._get_connect_master = rec('_get_connect_master', (object(), vm))
        d._create_vim = rec('_create_vim')
        d._delete_node_to_be_healed = rec('_delete_node_to_be_healed')
        d._heal_and_join_k8s_node = rec('_heal_and_join_k8s_node')
        return d

    def event(self, text):
        with open(os.path.join(self.dir, 'events'), 'a') as f:
            f.write('tacker ' + text + '\n')

    def events(self):
        with open(os.path.join(self.dir, 'events')) as f:
            return f.read().splitlines()

    def instance(self):
        from tacker import objects
        objects.register_all()
        params = {'k8s_cluster_installation_param': dict(
            PARAMS['k8s_cluster_installation_param'],
            script_path='Scripts/install_k8s_cluster.sh',
            master_node=dict(PARAMS['k8s_cluster_installation_param'][
                'master_node'], ssh_cp_name='masterNode_CP1',
                nic_cp_name='masterNode_CP1',
                cluster_cp_name='masterNode_CP1'),
            worker_node=dict(PARAMS['k8s_cluster_installation_param'][
                'worker_node'], ssh_cp_name='workerNode_CP2',
                nic_cp_name='workerNode_CP2'))}
        params['k8s_cluster_installation_param']['storage_server'].update(
            cinder_volume_setup_params=[], nfs_server_setup_params=[])
        vnfcs = [vnfc('vnfc-storage', 'storage_server', 'server-s',
                      cps=['storage_server_CP']),
                 vnfc('vnfc-worker1', 'workerNode', 'server-w1',
                      cps=['workerNode_CP2'])]
        info = Obj(instance_id='stack-1234', additional_params=params,
                   vnfc_resource_info=vnfcs)
        return Obj(id='vnf-1', vnfd_id='vnfd-1', instantiated_vnf_info=info,
                   vim_connection_info=[])

    def test_tackers_instantiate_end_calls_heatsible_for_storage(self):
        d = self.variant()
        self.fake(0)
        inst = self.instance()
        req = Obj(additional_params=inst.instantiated_vnf_info
                  .additional_params)
        d.instantiate_end(CONTEXT, inst, req, None, None)
        self.assertEqual(self.events(), [
            'tacker _get_vim_connection_info',
            'tacker _get_install_info_for_k8s_node',
            'tacker _get_install_info_for_k8s_node',
            'tacker _install_k8s_cluster',
            'heatsible run instantiate-end --tags '
            'cinder_volume,nfs_server,nfs_client,pv_register',
            'tacker _get_connect_master',
            'tacker _create_vim'])

    def test_tackers_heal_hooks_call_heatsible_for_storage(self):
        d = self.variant()
        self.fake(0)
        inst = self.instance()
        req = Obj(vnfc_instance_id=['vnfc-worker1', 'vnfc-storage'],
                  additional_params={})
        d.heal_start(CONTEXT, inst, req, None, None)
        d.heal_end(CONTEXT, inst, req, None, None)
        self.assertEqual(self.events(), [
            'heatsible plan heal-end --vnfc-resource-id server-w1 --tags '
            'nfs_client',
            'heatsible run heal-start --storage-server --tags '
            'cinder_volume,nfs_server,nfs_client,pv_register',
            'tacker _get_vim_connection_info',
            'tacker _delete_node_to_be_healed',
            'tacker _get_vim_connection_info',
            'tacker _heal_and_join_k8s_node',
            'heatsible run heal-end --storage-server --tags '
            'cinder_volume,nfs_server,nfs_client,pv_register',
            'heatsible run heal-end --vnfc-resource-id server-w1 --tags '
            'nfs_client'])

    def test_tackers_heal_of_the_whole_vnf(self):
        d = self.variant()
        self.fake(0)
        inst = self.instance()
        d.heal_end(CONTEXT, inst, Obj(vnfc_instance_id=[],
                                      additional_params={}), None, None)
        self.assertIn('heatsible run heal-end --cluster --tags '
                      'cinder_volume,nfs_server,nfs_client,pv_register',
                      self.events())
        self.assertEqual(self.events()[-1], 'tacker _create_vim')

    def test_tackers_scale_end_then_heatsible_nfs_client(self):
        d = self.variant()
        self.fake(0)
        inst = self.instance()
        inst.instantiated_vnf_info.additional_params[
            'k8s_cluster_installation_param']['proxy'] = {}
        installed = []

        def ret(value):
            return lambda *a, **k: value
        d._get_resources_list = ret([Obj(physical_resource_id='m0')])
        d._get_master_info = ret((['192.0.2.11'], ['192.0.2.11']))
        d._get_cluster_ip = ret('192.0.2.11')
        d._check_pod_affinity = ret(None)
        d._get_worker_info = ret((['192.0.2.31'], ['192.0.2.31'], [], [],
                                  {}, {}))
        d._connect_ssh_scale = ret((mock.Mock(), '192.0.2.11'))
        d._execute_command = ret(['token-or-hash\n'])
        d._get_vm_cidr_list = ret([])
        d._init_commander_and_send_install_scripts = ret(mock.Mock())
        d._set_node_ip_in_hosts = ret(None)

        def install_worker(commander, proxy, ha_flag, nic_ip, *rest):
            installed.append(nic_ip)
            self.event('_install_worker_node ' + nic_ip)
        d._install_worker_node = install_worker
        req = Obj(type='SCALE_OUT', aspect_id='worker_instance',
                  additional_params={})
        d.scale_end(CONTEXT, inst, req, None, None,
                    scale_out_id_list=['stack-n1'])
        self.assertEqual(installed, ['192.0.2.31'])
        self.assertEqual(self.events(), [
            'tacker _get_vim_connection_info',
            'tacker _install_worker_node 192.0.2.31',
            'heatsible run scale-end --nodes stack-n1 --tags nfs_client'])


if __name__ == '__main__':
    unittest.main()


# the tests that drive Tacker's sample KubernetesMgmtDriver
NEEDS_SAMPLE = {
    'test_check_base_accepts_tackers_driver',
    'test_tackers_instantiate_end_calls_heatsible_for_storage',
    'test_tackers_heal_hooks_call_heatsible_for_storage',
    'test_tackers_heal_of_the_whole_vnf',
    'test_tackers_scale_end_then_heatsible_nfs_client',
}
