"""The shim registers the cluster as Tacker's Kubernetes VIM (with fakes).

Run from this directory:  python3 -m unittest -v test_vim

heatsible is the fake of shim_fakes (it writes the "vim" object to the
--vim-info file, 0600, as docs/hooks.md says heatsible does); Tacker's VIM
registry is FakeVims, which answers like the shim's TackerVims.
"""

import copy
import json
import os
import unittest

from shim_fakes import (CA, CONTEXT, PARAMS, SERVER, TOKEN,
                        FakeHeatsibleCase, NoVims, Obj,
                        scale_request, shim, vim_doc, vnf_instance)

NAMED = copy.deepcopy(PARAMS)
NAMED['k8s_cluster_installation_param']['vim_name'] = 'kubernetes_vim'


class VimTest(FakeHeatsibleCase):

    def instantiate(self, inst=None, params=NAMED):
        inst = inst or vnf_instance(params=params)
        return inst, self.driver.instantiate_end(
            CONTEXT, inst, Obj(additional_params=copy.deepcopy(params)),
            None, None)

    def k8s_entries(self, inst):
        return [c for c in inst.vim_connection_info
                if c.vim_type == 'kubernetes']

    def test_instantiate_end_registers_the_vim_as_tacker_does(self):
        self.fake(0, stdout={'ok': True, 'exit_code': 0,
                             'vim': vim_doc('kubernetes_vim')},
                  vim=vim_doc('kubernetes_vim'))
        inst, result = self.instantiate()
        calls = self.calls()
        self.assertEqual(calls[0][-2:], ['--vim-info', 'VIM'])
        created = [a[1] for a in self.vims.asked if a[0] == 'create']
        self.assertEqual(created, [{'vim': {
            'name': 'kubernetes_vim',
            'description': 'Kubernetes cluster k8s-a of VNF instance vnf-1 '
                           '(registered by heatsible)',
            'auth_url': SERVER,
            'vim_project': {'name': 'default'},
            'auth_cred': {'bearer_token': TOKEN, 'ssl_ca_cert': CA},
            'type': 'kubernetes',
            'tenant_id': 'project-1',
            'extra': {'heatsible_vnf_instance_id': 'vnf-1',
                      'heatsible_cluster': 'k8s-a',
                      'heatsible_digest': created[0]['vim']['extra'][
                          'heatsible_digest']}}}])
        digest = created[0]['vim']['extra']['heatsible_digest']
        self.assertEqual(len(digest), 64)
        self.assertNotIn(TOKEN, digest)
        # appended after the OpenStack VIM (Tacker uses entry [0] as the
        # VNF's VIM), with Tacker's driver's shape, and saved
        self.assertEqual([c.vim_type for c in inst.vim_connection_info],
                         ['openstack', 'kubernetes'])
        entry = inst.vim_connection_info[1]
        self.assertEqual(entry.vim_id, 'vim-new-1')
        self.assertEqual(entry.access_info, {'auth_url': SERVER})
        self.assertEqual(inst.saves, 1)
        self.assertEqual(inst.saved_connections, inst.vim_connection_info)
        # the token is in nothing the hook returns or logs
        self.assertEqual(result['vim']['bearer_token'], '***')
        self.assertNotIn(TOKEN, json.dumps(result))
        self.no_token_logged()

    def test_tacker_default_vim_name(self):
        # no vim_name: kubernetes_vim_<VNF instance id>, as Tacker's drivers
        self.fake(0)
        self.instantiate(params=PARAMS)
        self.assertEqual(self.vims.asked[0], ('find', 'kubernetes_vim_vnf-1'))
        self.assertEqual(
            [v['name'] for v in self.vims.vims.values()],
            ['kubernetes_vim_vnf-1'])

    def test_rerun_changes_nothing(self):
        self.fake(0)
        inst, _ = self.instantiate()
        self.vims.asked = []
        inst.saves = 0
        _, result = self.instantiate(inst)
        self.assertEqual(self.vims.changes(), [])
        self.assertEqual(inst.saves, 0)
        self.assertEqual(len(self.k8s_entries(inst)), 1)
        self.assertEqual(result['vim']['bearer_token'], '***')

    def test_new_token_replaces_the_vim(self):
        self.fake(0)
        inst, _ = self.instantiate()
        self.fake(0, vim=vim_doc('kubernetes_vim', token='other-token'))
        self.instantiate(inst)
        self.assertEqual(self.vims.changes()[1:], [
            ('delete', 'vim-new-1'), self.vims.changes()[2]])
        self.assertEqual(self.vims.changes()[2][0], 'create')
        self.assertEqual([e.vim_id for e in self.k8s_entries(inst)],
                         ['vim-new-2'])
        self.assertEqual(list(self.vims.vims), ['vim-new-2'])

    def test_a_vim_name_of_another_cluster_is_refused_before_anything(self):
        for extra in ({'heatsible_vnf_instance_id': 'vnf-other',
                       'heatsible_cluster': 'k8s-b'},
                      {}):
            with self.subTest(extra=extra):
                self.vims.vims.clear()
                old = self.vims.add('kubernetes_vim', extra=extra)
                self.fake(0)
                inst = vnf_instance(params=NAMED)
                with self.assertRaises(shim.HeatsibleError) as cm:
                    self.instantiate(inst)
                msg = str(cm.exception)
                self.assertIn("vim_name 'kubernetes_vim' is already "
                              "registered in Tacker for another cluster "
                              "(VIM %s" % old, msg)
                self.assertIn('nothing was run or registered', msg)
                self.assertIn('k8s_cluster_installation_param.vim_name', msg)
                if extra:
                    self.assertIn('VNF instance vnf-other, cluster k8s-b',
                                  msg)
                self.assertEqual(cm.exception.exit_code, 6)
                self.assertEqual(self.calls(), [])  # heatsible never ran
                self.assertEqual(self.vims.changes(), [])
                self.assertEqual(inst.saves, 0)

    def test_same_name_in_another_project_is_not_a_conflict(self):
        self.vims.add('kubernetes_vim', tenant='project-2')
        self.fake(0)
        inst, _ = self.instantiate()
        self.assertEqual(len(self.k8s_entries(inst)), 1)

    def test_a_vim_this_vnf_links_to_is_adopted(self):
        # registered by Tacker's own KubernetesMgmtDriver for this VNF
        # (no heatsible marks, but in its vimConnectionInfo): replaced
        old = self.vims.add('kubernetes_vim', auth_url=SERVER)
        inst = vnf_instance(params=NAMED)
        inst.vim_connection_info.append(
            Obj(id='conn-old', vim_id=old, vim_type='kubernetes',
                access_info={'auth_url': SERVER}, extra={}))
        self.fake(0)
        self.instantiate(inst)
        self.assertEqual(self.vims.changes()[0], ('delete', old))
        self.assertEqual([e.vim_id for e in self.k8s_entries(inst)],
                         ['vim-new-2'])

    def test_heal_of_the_whole_vnf(self):
        self.fake(0)
        inst, _ = self.instantiate()
        # heal_start: heatsible runs, then the old cluster's VIM goes
        self.driver.heal_start(CONTEXT, inst,
                               Obj(vnfc_instance_id=[]), None, None)
        self.assertEqual(self.calls()[1][:3],
                         ['run', 'heal-start', '--cluster'])
        self.assertNotIn('--vim-info', self.calls()[1])
        self.assertEqual(self.vims.changes()[-1], ('delete', 'vim-new-1'))
        self.assertEqual(self.k8s_entries(inst), [])
        self.assertEqual(inst.saves, 2)
        # heal_end: the new cluster is registered again
        self.fake(0, vim=vim_doc('kubernetes_vim',
                                 server='https://10.10.0.99:6443'))
        self.driver.heal_end(CONTEXT, inst, Obj(vnfc_instance_id=[]),
                             None, None)
        self.assertEqual(self.calls()[2][-2:], ['--vim-info', 'VIM'])
        self.assertEqual([e.access_info for e in self.k8s_entries(inst)],
                         [{'auth_url': 'https://10.10.0.99:6443'}])
        self.no_token_logged()

    def test_heal_start_failure_keeps_the_vim(self):
        self.fake(0)
        inst, _ = self.instantiate()
        self.fake(3, stderr={'ok': False, 'exit_code': 3,
                             'error': 'connecting to the Ansible host'})
        with self.assertRaises(shim.HeatsibleError):
            self.driver.heal_start(CONTEXT, inst,
                                   Obj(vnfc_instance_id=[]), None, None)
        self.assertEqual(list(self.vims.vims), ['vim-new-1'])
        self.assertEqual(len(self.k8s_entries(inst)), 1)

    def test_node_heal_and_scale_leave_the_vim_alone(self):
        self.fake(0)
        inst, _ = self.instantiate()
        self.vims.asked = []
        self.driver.heal_start(CONTEXT, inst,
                               Obj(vnfc_instance_id=['vnfc-worker1']),
                               None, None)
        self.driver.heal_end(CONTEXT, inst,
                             Obj(vnfc_instance_id=['vnfc-worker1']),
                             None, None)
        self.driver.scale_end(CONTEXT, inst, scale_request('SCALE_OUT'),
                              None, None, scale_out_id_list=['s1'])
        self.assertEqual(self.vims.asked, [])
        for argv in self.calls()[1:]:
            self.assertNotIn('--vim-info', argv)

    def test_terminate_end_removes_only_this_vnfs_vim(self):
        self.fake(0)
        inst, _ = self.instantiate()
        self.driver.terminate_start(CONTEXT, inst, None, None, None)
        # Tacker has emptied vimConnectionInfo before terminate_end
        inst.vim_connection_info = []
        inst.instantiated_vnf_info.instance_id = None
        self.driver.terminate_end(CONTEXT, inst, None, None, None)
        self.assertEqual(self.vims.changes()[-1], ('delete', 'vim-new-1'))
        self.assertEqual(self.vims.vims, {})
        self.assertEqual(self.calls()[-1][:2], ['run', 'terminate-end'])
        # another cluster's VIM of that name is never deleted
        other = self.vims.add('kubernetes_vim',
                              extra={'heatsible_vnf_instance_id': 'vnf-2'})
        self.driver.terminate_end(CONTEXT, inst, None, None, None)
        self.assertIn(other, self.vims.vims)
        self.assertTrue(any('belongs to another cluster' in line
                            for line in self.logs.lines))

    def test_rollback_terminate_end_removes_the_entry_too(self):
        # Tacker's rollback of an instantiation calls terminate_end with
        # terminate_vnf_request=None and vimConnectionInfo still set
        self.fake(0)
        inst, _ = self.instantiate()
        saves = inst.saves
        self.driver.terminate_end(CONTEXT, inst, None, None, None)
        self.assertEqual([c.vim_type for c in inst.vim_connection_info],
                         ['openstack'])
        self.assertEqual(inst.saves, saves + 1)

    def test_disabled(self):
        os.environ['HEATSIBLE_REGISTER_VIM'] = '0'
        self.driver.vims = NoVims()
        self.fake(0)
        inst, _ = self.instantiate()
        self.driver.heal_start(CONTEXT, inst, Obj(vnfc_instance_id=[]),
                               None, None)
        self.driver.heal_end(CONTEXT, inst, Obj(vnfc_instance_id=[]),
                             None, None)
        self.driver.terminate_end(CONTEXT, inst, None, None, None)
        for argv in self.calls():
            self.assertNotIn('--vim-info', argv)
        self.assertEqual(inst.saves, 0)

    def test_a_bad_vim_object_registers_nothing(self):
        for name, env, needle in [
                ('mode', {'FAKE_VIM_MODE': '644'}, 'has mode 644, not 0600'),
                ('missing', {'FAKE_VIM': ''}, 'wrote no --vim-info file'),
                ('http', {'FAKE_VIM': json.dumps(vim_doc(
                    server='http://10.10.0.12:6443'))}, 'no https://'),
                ('token', {'FAKE_VIM': json.dumps(vim_doc(token=''))},
                 'no usable "bearer_token"'),
                ('ca', {'FAKE_VIM': json.dumps(vim_doc(ca='junk'))},
                 'not a PEM certificate'),
                ('name', {'FAKE_VIM': json.dumps(vim_doc('other'))},
                 "names VIM 'other'")]:
            with self.subTest(name=name):
                self.vims = self.driver.vims = type(self.vims)()
                self.fake(0)
                os.environ.update(env)
                inst = vnf_instance(params=NAMED)
                with self.assertRaises(shim.HeatsibleError) as cm:
                    self.instantiate(inst)
                self.assertIn(needle, str(cm.exception))
                self.assertEqual(self.vims.changes(), [])
                self.assertEqual(inst.saves, 0)
                os.environ.pop('FAKE_VIM_MODE', None)
                os.environ['FAKE_VIM'] = json.dumps(vim_doc())

    def test_no_ca_registers_without_ssl_ca_cert(self):
        self.fake(0, vim=vim_doc('kubernetes_vim', ca=''))
        self.instantiate()
        body = [a[1] for a in self.vims.asked if a[0] == 'create'][0]
        self.assertEqual(body['vim']['auth_cred'], {'bearer_token': TOKEN})

    def test_registration_failure_says_so(self):
        class Failing(type(self.vims)):
            def create(self, context, body):
                raise RuntimeError('VIM Kubernetes authentication is wrong')
        self.driver.vims = Failing()
        self.fake(0)
        inst = vnf_instance(params=NAMED)
        with self.assertRaises(shim.HeatsibleError) as cm:
            self.instantiate(inst)
        self.assertIn("registering Kubernetes VIM 'kubernetes_vim' "
                      "(https://10.10.0.12:6443) in Tacker failed: VIM "
                      "Kubernetes authentication is wrong", str(cm.exception))
        self.assertEqual(self.k8s_entries(inst), [])
        self.no_token_logged()


if __name__ == '__main__':
    unittest.main()
