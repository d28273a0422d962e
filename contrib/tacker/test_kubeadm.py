"""The kubeadm variant: Tacker's KubernetesMgmtDriver + heatsible storage.

Run from this directory:  python3 -m unittest -v test_kubeadm

FakeKubernetesMgmtDriver stands in for Tacker's
samples/mgmt_driver/kubernetes/kubernetes_mgmt.py: the same method names and
parameters (check_base must accept it, as it accepts Tacker's real class:
see README.md, "Checked against Tacker's real driver"), and the same order
of calls into its storage methods as Tacker's hooks at openstack/tacker
fea54ab (instantiate_end 1230-1258, heal_start 2340-2368, heal_end
2726-2764 with _heal_and_join_k8s_node 2626-2652, scale_end 1794-1831). It
writes what it does to the fake heatsible's events file, so that the tests
see Tacker's steps and heatsible's runs in one order.
"""

import copy
import os
import unittest

import heatsible_kubeadm_mgmt_driver as kubeadm
from shim_fakes import (CONTEXT, PARAMS, FakeHeatsibleCase,
                        NoVims, Obj, scale_request, shim, vnf_instance, vnfc)

STORAGE = kubeadm.STORAGE_TAGS


class FakeKubernetesMgmtDriver(object):
    """Tacker's KubernetesMgmtDriver: its hooks' storage calls, in order."""

    def __init__(self):
        self.inits = getattr(self, 'inits', 0) + 1

    def event(self, text):
        with open(os.path.join(os.environ['FAKE_DIR'], 'events'), 'a') as f:
            f.write('tacker ' + text + '\n')

    def get_type(self):
        return 'mgmt-drivers-kubernetes'

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant,
                          grant_request, **kwargs):
        pass

    def instantiate_end(self, context, vnf_instance,
                        instantiate_vnf_request, grant,
                        grant_request, **kwargs):
        k8s = instantiate_vnf_request.additional_params[
            'k8s_cluster_installation_param']
        self.event('install kubernetes (kubeadm)')
        ss = k8s.get('storage_server')
        if ss:
            self._install_storage_server(context, vnf_instance, {}, ss)
            for ip in ('10.10.0.11', '10.10.0.21'):
                self._install_nfs_client('ubuntu', 'pw', ip)
            self.event('connect to a master')
            self._register_persistent_volumes(
                context, vnf_instance, object(), 'ubuntu', 'pw',
                '10.10.0.11', k8s.get('pv_registration_params'))
        self.event('register its Kubernetes VIM')

    def terminate_start(self, context, vnf_instance,
                        terminate_vnf_request, grant,
                        grant_request, **kwargs):
        pass

    def terminate_end(self, context, vnf_instance,
                      terminate_vnf_request, grant,
                      grant_request, **kwargs):
        self.event('delete its Kubernetes VIM')

    def scale_start(self, context, vnf_instance,
                    scale_vnf_request, grant,
                    grant_request, **kwargs):
        self.event('drain and delete the scale-in workers')

    def scale_end(self, context, vnf_instance,
                  scale_vnf_request, grant,
                  grant_request, **kwargs):
        if scale_vnf_request.type != 'SCALE_OUT':
            return
        for n, _ in enumerate(kwargs.get('scale_out_id_list') or []):
            self.event('kubeadm join new worker %d' % n)
            if vnf_instance.instantiated_vnf_info.additional_params[
                    'k8s_cluster_installation_param'].get('storage_server'):
                self._install_nfs_client('ubuntu', 'pw', '10.10.0.3%d' % n)

    def _get_target_physical_resource_ids(self, vnf_instance,
                                          heal_vnf_request):
        # Tacker's split: the storage server is the VNFC with a CP whose
        # cpd_id is storage_server.nic_cp_name
        cp = vnf_instance.instantiated_vnf_info.additional_params[
            'k8s_cluster_installation_param'].get(
                'storage_server', {}).get('nic_cp_name')
        nodes, storage = [], []
        for vid in heal_vnf_request.vnfc_instance_id:
            for v in vnf_instance.instantiated_vnf_info.vnfc_resource_info:
                if v.id != vid:
                    continue
                cps = [c.cpd_id for c in getattr(v, 'vnfc_cp_info', [])]
                (storage if cp and cp in cps else nodes).append(
                    v.compute_resource.resource_id)
        return nodes, storage

    def heal_start(self, context, vnf_instance,
                   heal_vnf_request, grant,
                   grant_request, **kwargs):
        if not heal_vnf_request.vnfc_instance_id:
            self.event('delete its Kubernetes VIM')
            return
        nodes, storage = self._get_target_physical_resource_ids(
            vnf_instance, heal_vnf_request)
        if nodes:
            self.event('drain and delete nodes %s' % ','.join(nodes))
        if storage:
            self._heal_start_storage_server(
                context, vnf_instance, {}, object(), 'stack', nodes,
                'ubuntu', 'pw', 'master_instance', {})

    def heal_end(self, context, vnf_instance,
                 heal_vnf_request, grant,
                 grant_request, **kwargs):
        if not heal_vnf_request.vnfc_instance_id:
            self.instantiate_end(context, vnf_instance,
                                 vnf_instance.instantiated_vnf_info,
                                 grant=grant, grant_request=grant_request,
                                 **kwargs)
            return
        nodes, storage = self._get_target_physical_resource_ids(
            vnf_instance, heal_vnf_request)
        if nodes:
            self.event('kubeadm join nodes %s' % ','.join(nodes))
            if vnf_instance.instantiated_vnf_info.additional_params[
                    'k8s_cluster_installation_param'].get('storage_server'):
                for n in nodes:
                    self._install_nfs_client('ubuntu', 'pw', n)
        if storage:
            self._heal_end_storage_server(
                context, vnf_instance, {}, 'stack', {}, 'master_instance',
                object(), nodes, 'ubuntu', 'pw')

    def change_external_connectivity_start(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        pass

    def change_external_connectivity_end(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        pass

    def modify_information_start(self, context, vnf_instance,
                                 modify_vnf_request, **kwargs):
        pass

    def modify_information_end(self, context, vnf_instance,
                               modify_vnf_request, **kwargs):
        pass

    # Tacker's storage steps: the variant must replace every one of them
    def _install_storage_server(self, context, vnf_instance, proxy,
                                ss_installation_params):
        self.event('MKFS AND EXPORTS ON THE STORAGE SERVER')

    def _install_nfs_client(self, node_username, node_password, node_ip):
        self.event('nfs-common on %s' % node_ip)

    def _register_persistent_volumes(self, context, vnf_instance, commander,
                                     master_username, master_password,
                                     master_ip, pv_registration_params):
        self.event('sed and kubectl apply the PVs')

    def _heal_start_storage_server(
            self, context, vnf_instance, vnf_additional_params, heatclient,
            stack_id, target_node_physical_resource_ids, master_username,
            master_password, master_resource_name, master_node):
        self.event('delete the PVs')

    def _heal_end_storage_server(self, context, vnf_instance,
                                 vnf_additional_params, stack_id,
                                 master_node, master_resource_name,
                                 heatclient,
                                 target_node_physical_resource_ids,
                                 master_username, master_password):
        self.event('MKFS AND EXPORTS ON THE NEW STORAGE SERVER')


Driver = kubeadm.make_driver_class(FakeKubernetesMgmtDriver)

NO_ANSIBLE = copy.deepcopy(PARAMS)  # Tacker's PV guide: no "ansible"
del NO_ANSIBLE['k8s_cluster_installation_param']['ansible']


def kubeadm_instance(params=NO_ANSIBLE):
    return vnf_instance(params=params, vnfcs=[
        vnfc('vnfc-storage', 'storage_server', 'server-s',
             cps=['storage_server_CP']),
        vnfc('vnfc-master0', 'masterNode', 'server-m0',
             cps=['masterNode_CP1']),
        vnfc('vnfc-worker1', 'workerNode', 'server-w1',
             cps=['workerNode_CP2'])])


class KubeadmTest(FakeHeatsibleCase):

    def make_driver(self):
        return Driver()

    def setUp(self):
        super().setUp()
        # Tacker's driver registers the VIM; the variant never does
        self.driver.vims = NoVims()
        self.driver._hs.vims = NoVims()

    def events(self):
        path = os.path.join(self.dir, 'events')
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().splitlines()

    def run_tail(self, where=('--local',)):
        return self.tail(where=where)

    def test_instantiate_end(self):
        self.fake(0)
        inst = kubeadm_instance()
        self.driver.instantiate_end(CONTEXT, inst,
                                    Obj(additional_params=NO_ANSIBLE),
                                    None, None)
        self.assertEqual(self.events(), [
            'tacker install kubernetes (kubeadm)',
            'heatsible run instantiate-end --tags ' + STORAGE + ' --local',
            'tacker connect to a master',
            'tacker register its Kubernetes VIM'])
        self.assertEqual(self.calls(), [
            ['run', 'instantiate-end', '--tags', STORAGE]
            + self.run_tail()])
        self.assertEqual(self.requests(), [NO_ANSIBLE])

    def test_heal_of_the_whole_vnf(self):
        self.fake(0)
        inst = kubeadm_instance()
        self.driver.heal_start(CONTEXT, inst, Obj(vnfc_instance_id=[]),
                               None, None)
        self.driver.heal_end(CONTEXT, inst, Obj(vnfc_instance_id=[]),
                             None, None)
        self.assertEqual(self.events(), [
            'tacker delete its Kubernetes VIM',
            'heatsible run heal-start --cluster --local',
            'tacker install kubernetes (kubeadm)',
            # Tacker's heal_end goes through instantiate_end: the storage
            # run is still the heal's
            'heatsible run heal-end --cluster --tags ' + STORAGE
            + ' --local',
            'tacker connect to a master',
            'tacker register its Kubernetes VIM'])

    def test_heal_of_nodes_and_the_storage_server(self):
        self.fake(0)
        inst = kubeadm_instance()
        req = Obj(vnfc_instance_id=['vnfc-worker1', 'vnfc-storage'])
        self.driver.heal_start(CONTEXT, inst, req, None, None)
        # Tacker's post_heal_vnf: the worker has a new server now
        inst.instantiated_vnf_info.vnfc_resource_info[2]. \
            compute_resource.resource_id = 'server-w1-new'
        self.driver.heal_end(CONTEXT, inst, req, None, None)
        self.assertEqual(self.events(), [
            # asked first: will heatsible take the node at heal_end?
            'heatsible plan heal-end --vnfc-resource-id server-w1 '
            '--tags nfs_client',
            # the storage server's PVs before Tacker drains anything
            'heatsible run heal-start --storage-server --tags ' + STORAGE
            + ' --local',
            'tacker drain and delete nodes server-w1',
            'tacker kubeadm join nodes server-w1-new',
            'heatsible run heal-end --storage-server --tags ' + STORAGE
            + ' --local',
            'heatsible run heal-end --vnfc-resource-id server-w1-new '
            '--tags nfs_client --local'])
        plan = self.calls()[0]
        self.assertEqual(plan, [
            'plan', 'heal-end', '--vnfc-resource-id', 'server-w1', '--tags',
            'nfs_client', '--request', 'REQ', '--package', '/srv/pkg',
            '--stack', 'stack-1234', '-o', 'json'])
        self.assertEqual(self.calls()[-1], [
            'run', 'heal-end', '--vnfc-resource-id', 'server-w1-new',
            '--tags', 'nfs_client'] + self.run_tail())

    def test_a_node_heatsible_would_refuse_is_refused_before_tacker(self):
        err = {'ok': False, 'exit_code': 2,
               'error': 'heal-end --node master-0: a control-plane node is '
                        're-added by kubespray, and the request has no '
                        'ansible.kubespray_root_path'}
        self.fake(2, stderr=err)
        inst = kubeadm_instance()
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver.heal_start(
                CONTEXT, inst,
                Obj(vnfc_instance_id=['vnfc-master0', 'vnfc-storage']),
                None, None)
        self.assertIn('a control-plane node is re-added by kubespray',
                      str(cm.exception))
        self.assertIn('before Tacker removes the node', str(cm.exception))
        # nothing else happened: no PV unregistered, no node drained
        self.assertEqual(self.events(), [
            'heatsible plan heal-end --vnfc-resource-id server-m0 '
            '--tags nfs_client'])

    def test_a_bound_pv_stops_the_heal_before_any_node_is_drained(self):
        self.fake(6, stderr={'ok': False, 'exit_code': 6,
                             'error': 'PV nfs-pv1 is Bound to default/data'},
                  fail_at=2)
        inst = kubeadm_instance()
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver.heal_start(
                CONTEXT, inst,
                Obj(vnfc_instance_id=['vnfc-worker1', 'vnfc-storage']),
                None, None)
        self.assertEqual(cm.exception.exit_code, 6)
        self.assertNotIn('tacker drain and delete nodes server-w1',
                         self.events())

    def test_scale(self):
        self.fake(0)
        inst = kubeadm_instance()
        self.driver.scale_start(CONTEXT, inst, scale_request('SCALE_IN'),
                                None, None, scale_name_list=['w9'])
        self.driver.scale_end(CONTEXT, inst, scale_request('SCALE_OUT'),
                              None, None,
                              scale_out_id_list=['stack-n1', 'stack-n2'])
        # another aspect: Tacker's business only
        self.driver.scale_end(CONTEXT, inst,
                              scale_request('SCALE_OUT', 'other_aspect'),
                              None, None, scale_out_id_list=['stack-x'])
        self.assertEqual(self.events(), [
            'tacker drain and delete the scale-in workers',
            'tacker kubeadm join new worker 0',
            'tacker kubeadm join new worker 1',
            'heatsible run scale-end --nodes stack-n1,stack-n2 --tags '
            'nfs_client --local',
            'tacker kubeadm join new worker 0'])

    def test_without_a_storage_server_heatsible_never_runs(self):
        params = copy.deepcopy(NO_ANSIBLE)
        del params['k8s_cluster_installation_param']['storage_server']
        self.fake(0)
        inst = kubeadm_instance(params)
        self.driver.instantiate_end(CONTEXT, inst,
                                    Obj(additional_params=params),
                                    None, None)
        self.driver.heal_start(CONTEXT, inst,
                               Obj(vnfc_instance_id=['vnfc-worker1']),
                               None, None)
        self.driver.heal_end(CONTEXT, inst,
                             Obj(vnfc_instance_id=['vnfc-worker1']),
                             None, None)
        self.driver.scale_end(CONTEXT, inst, scale_request('SCALE_OUT'),
                              None, None, scale_out_id_list=['stack-n1'])
        self.assertEqual([e for e in self.events()
                          if e.startswith('heatsible')], [])

    def test_terminate(self):
        self.fake(0)
        inst = kubeadm_instance()
        self.driver.terminate_start(CONTEXT, inst, None, None, None)
        inst.instantiated_vnf_info.instance_id = None
        inst.vim_connection_info = []
        self.driver.terminate_end(CONTEXT, inst, None, None, None)
        self.assertEqual(self.events(), [
            'heatsible topology',
            'tacker delete its Kubernetes VIM',
            'heatsible run terminate-end --topology --local'])

    def test_tackers_storage_steps_never_run(self):
        self.fake(0)
        inst = kubeadm_instance()
        req = Obj(vnfc_instance_id=['vnfc-worker1', 'vnfc-storage'])
        self.driver.instantiate_end(CONTEXT, inst,
                                    Obj(additional_params=NO_ANSIBLE),
                                    None, None)
        self.driver.heal_start(CONTEXT, inst, req, None, None)
        self.driver.heal_end(CONTEXT, inst, req, None, None)
        self.driver.heal_end(CONTEXT, inst, Obj(vnfc_instance_id=[]),
                             None, None)
        self.driver.scale_end(CONTEXT, inst, scale_request('SCALE_OUT'),
                              None, None, scale_out_id_list=['stack-n1'])
        for e in self.events():
            self.assertNotIn('MKFS', e)
            self.assertNotIn('nfs-common', e)
            self.assertNotIn('kubectl apply the PVs', e)
            self.assertNotIn('delete the PVs', e)
        for argv in self.calls():
            self.assertNotIn('--vim-info', argv)

    def test_a_storage_step_outside_a_hook_is_refused(self):
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.driver._install_storage_server(CONTEXT, kubeadm_instance(),
                                                {}, {})
        self.assertIn('outside the hooks', str(cm.exception))
        self.assertEqual(self.calls(), [])

    def test_type(self):
        self.assertEqual(self.driver.get_type(),
                         'mgmt-drivers-heatsible-kubeadm')


class CheckBaseTest(unittest.TestCase):

    def test_the_fake_matches(self):
        self.assertEqual(kubeadm.check_base(FakeKubernetesMgmtDriver), [])

    def test_a_changed_tacker_driver_refuses_to_load(self):
        class Changed(FakeKubernetesMgmtDriver):
            _install_storage_server = None  # renamed away

            def _heal_end_storage_server(self, context, vnf_instance):
                pass
        problems = kubeadm.check_base(Changed)
        self.assertEqual(problems, [
            'Changed._heal_end_storage_server(context, vnf_instance), '
            'expected (context, vnf_instance, vnf_additional_params, '
            'stack_id, master_node, master_resource_name, heatclient, '
            'target_node_physical_resource_ids, master_username, '
            'master_password)',
            'Changed._install_storage_server is missing'])
        cls = kubeadm.make_driver_class(Changed)
        with self.assertRaises(RuntimeError) as cm:
            cls()
        self.assertIn('Refusing to load', str(cm.exception))
        self.assertIn('mkfs', str(cm.exception))

    def test_without_tacker(self):
        cls = kubeadm.make_driver_class(
            kubeadm._MissingKubernetesMgmtDriver)
        with self.assertRaises(RuntimeError) as cm:
            cls()
        self.assertIn('cannot be imported', str(cm.exception))


if __name__ == '__main__':
    unittest.main()
