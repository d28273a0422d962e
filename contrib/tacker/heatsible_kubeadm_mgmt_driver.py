# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Tacker's own KubernetesMgmtDriver for Kubernetes, heatsible for storage.

For clusters that Tacker's kubeadm scripts build (its PV guide:
samples/mgmt_driver/kubernetes/kubernetes_mgmt.py with install_k8s_cluster.sh):
HeatsibleKubeadmMgmtDriver is a subclass of that KubernetesMgmtDriver. Every
hook is Tacker's (kubeadm install, node heal and scale with kubeadm join,
Tacker's own Kubernetes VIM), except the storage steps, which heatsible does
with --tags (so that nothing but its storage roles ever runs):

  Tacker's driver calls             this class runs instead
  _install_storage_server           heatsible run instantiate-end (or, inside
  (instantiate_end, and heal_end     heal_end of the whole VNF, heal-end
  of the whole VNF through it)       --cluster) --tags cinder_volume,
                                     nfs_server,nfs_client,pv_register: the
                                     storage server, the NFS client on every
                                     node, the PVs, in one run
  _install_nfs_client (per node)    nothing (heatsible did it, or does it
                                     after the hook, below)
  _register_persistent_volumes      nothing (heatsible did it)
  _heal_start_storage_server        nothing: heal_start already ran heatsible
                                     heal-start --storage-server, BEFORE
                                     Tacker drains any node (a Bound PV stops
                                     the heal with nothing changed)
  _heal_end_storage_server          heatsible run heal-end --storage-server

and after Tacker's hook: heal_end of nodes runs heal-end --vnfc-resource-id
ID --tags nfs_client per re-joined node, scale_end of the worker aspect runs
scale-end --nodes <new members> --tags nfs_client (only when the VNF has a
storage_server, as Tacker's driver installs the NFS client only then).
heal_start of nodes first asks heatsible's plan whether it will accept that
heal_end (heatsible plan heal-end --vnfc-resource-id ID --tags nfs_client),
so that a node is never removed by Tacker and then left without its NFS
client. terminate_start/terminate_end save the topology and clean
heatsible's state up, as HeatsibleMgmtDriver does; the Kubernetes VIM stays
Tacker's (this class never passes --vim-info).

Why a subclass and these methods: Tacker's driver does the storage steps
only through them (kubernetes_mgmt.py at openstack/tacker fea54ab:
instantiate_end 1238-1253, heal_start 2363-2368, heal_end 2759-2764,
_heal_and_join_k8s_node 2637-2652, scale_end 1826-1831), and its hooks read
storage_server from the instantiated VNF's additionalParams, which cannot be
hidden from it without changing what Tacker saves. A release that renamed
one of them would let Tacker format the volume itself: the class refuses to
load unless every method it relies on is there with the parameters it was
checked with (EXPECTED below).

Install: Tacker's kubernetes_mgmt.py where Tacker's guide puts it
(tacker/vnfm/mgmt_drivers/kubernetes_mgmt.py; HEATSIBLE_KUBERNETES_MGMT_MODULE
names another module), heatsible_mgmt_driver.py and this file beside each
other; see README.md.
"""

import contextlib
import importlib
import inspect
import os
import threading

if __package__:  # pragma: no cover - inside Tacker's tree
    hs = importlib.import_module(__package__ + '.heatsible_mgmt_driver')
else:
    import heatsible_mgmt_driver as hs

LOG = hs.LOG

# Where Tacker's guide installs its sample driver (tacker.conf's
# mgmt-drivers-kubernetes entry point points there).
TACKER_MODULE = os.environ.get('HEATSIBLE_KUBERNETES_MGMT_MODULE',
                               'tacker.vnfm.mgmt_drivers.kubernetes_mgmt')

# heatsible's storage roles: with --tags, neither kubespray, nor the load
# balancer, nor any other step runs (heatsible's run --help).
STORAGE_TAGS = 'cinder_volume,nfs_server,nfs_client,pv_register'

_HOOK = ['self', 'context', 'vnf_instance', '*', 'grant', 'grant_request',
         'kwargs']

# Every method of Tacker's KubernetesMgmtDriver this class overrides or
# calls, with its parameters as read at openstack/tacker fea54ab
# (samples/mgmt_driver/kubernetes/kubernetes_mgmt.py, line of the def).
# '*' stands for the hook's request, named differently per hook.
EXPECTED = {
    'instantiate_end': _HOOK,                                      # 1120
    'terminate_start': _HOOK,                                      # 1280
    'terminate_end': _HOOK,                                        # 1296
    'scale_end': _HOOK,                                            # 1662
    'heal_start': _HOOK,                                           # 2318
    'heal_end': _HOOK,                                             # 2710
    '_get_target_physical_resource_ids': [                         # 2242
        'self', 'vnf_instance', 'heal_vnf_request'],
    '_install_storage_server': [                                   # 2799
        'self', 'context', 'vnf_instance', 'proxy',
        'ss_installation_params'],
    '_install_nfs_client': [                                       # 2913
        'self', 'node_username', 'node_password', 'node_ip'],
    '_register_persistent_volumes': [                              # 2935
        'self', 'context', 'vnf_instance', 'commander', 'master_username',
        'master_password', 'master_ip', 'pv_registration_params'],
    '_heal_start_storage_server': [                                # 3022
        'self', 'context', 'vnf_instance', 'vnf_additional_params',
        'heatclient', 'stack_id', 'target_node_physical_resource_ids',
        'master_username', 'master_password', 'master_resource_name',
        'master_node'],
    '_heal_end_storage_server': [                                  # 3104
        'self', 'context', 'vnf_instance', 'vnf_additional_params',
        'stack_id', 'master_node', 'master_resource_name', 'heatclient',
        'target_node_physical_resource_ids', 'master_username',
        'master_password'],
}


def check_base(base):
    """What in base differs from the KubernetesMgmtDriver this was built on.

    A list of sentences; empty when every method in EXPECTED is there with
    those parameters.
    """
    problems = []
    for name, want in sorted(EXPECTED.items()):
        fn = getattr(base, name, None)
        if fn is None:
            problems.append('%s.%s is missing' % (base.__name__, name))
            continue
        try:
            got = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            problems.append('%s.%s has no readable signature' % (
                base.__name__, name))
            continue
        if len(got) != len(want) or any(
                w != '*' and w != g for w, g in zip(want, got)):
            problems.append('%s.%s(%s), expected (%s)' % (
                base.__name__, name, ', '.join(got[1:]),
                ', '.join(w for w in want[1:])))
    return problems


class _MissingKubernetesMgmtDriver(object):
    """Stands in when Tacker's KubernetesMgmtDriver cannot be imported."""

    import_error = None

    def __init__(self):
        raise RuntimeError(
            'heatsible kubeadm MgmtDriver: Tacker\'s KubernetesMgmtDriver '
            '(%s) cannot be imported: %s. Copy Tacker\'s '
            'samples/mgmt_driver/kubernetes/kubernetes_mgmt.py there, as '
            'Tacker\'s Kubernetes guide does, or set '
            'HEATSIBLE_KUBERNETES_MGMT_MODULE' % (
                TACKER_MODULE, self.import_error))


def make_driver_class(base):
    """HeatsibleKubeadmMgmtDriver on top of base (Tacker's driver, or a
    fake of it in tests)."""
    # (without Tacker's driver, its stand-in's __init__ says why)
    problems = ([] if base is _MissingKubernetesMgmtDriver
                else check_base(base))

    class HeatsibleKubeadmMgmtDriver(base):

        def __init__(self):
            if problems:
                raise RuntimeError(
                    'heatsible kubeadm MgmtDriver: Tacker\'s %s (%s) is not '
                    'the one this driver was checked against: %s. Refusing '
                    'to load: Tacker\'s driver might then do the storage '
                    'steps itself (mkfs included)' % (
                        base.__name__, inspect.getfile(base),
                        '; '.join(problems)))
            super().__init__()
            self._hs = self.heatsible_driver()
            # The Kubernetes VIM is registered by Tacker's driver.
            self._hs.register_vim = False
            self._local = threading.local()

        @staticmethod
        def heatsible_driver():
            """The HeatsibleMgmtDriver that runs heatsible for this one."""
            return hs.HeatsibleMgmtDriver()

        def get_type(self):
            return 'mgmt-drivers-heatsible-kubeadm'

        def get_name(self):
            return 'mgmt-drivers-heatsible-kubeadm'

        def get_description(self):
            return ('Tacker\'s Kubernetes MgmtDriver, with the storage '
                    'steps done by heatsible')

        # ---- what one hook call is doing (per green thread) -----------

        @contextlib.contextmanager
        def _storage_call(self, operation, target, context, vnf_instance,
                          params, kwargs):
            """Tell the storage overrides which heatsible run is meant.

            A call that is already under way wins: Tacker's heal_end of the
            whole VNF calls instantiate_end, and that storage run is the
            heal's (heal-end --cluster), not an instantiation's.
            """
            if getattr(self._local, 'call', None) is not None:
                yield self._local.call
                return
            self._local.call = {
                'operation': operation, 'target': list(target),
                'context': context, 'vnf_instance': vnf_instance,
                'params': params, 'kwargs': kwargs}
            try:
                yield self._local.call
            finally:
                self._local.call = None

        def _call_or_refuse(self, method):
            call = getattr(self._local, 'call', None)
            if call is None:
                hs._raise('heatsible kubeadm MgmtDriver: Tacker\'s driver '
                          'called %s outside the hooks this driver knows; '
                          'refused, nothing was run' % method,
                          hs.EXIT_INTERNAL)
            return call

        def _run(self, call, operation, target, note=''):
            h = self._hs
            vnf_instance, kwargs = call['vnf_instance'], call['kwargs']
            return h._run(
                operation, list(target), call['params'],
                ['--stack', h._stack_id(vnf_instance, kwargs)],
                h._package_dir(call['context'], vnf_instance, kwargs), note)

        @staticmethod
        def _has_storage(params):
            k8s = params.get('k8s_cluster_installation_param') or {}
            return bool(k8s.get('storage_server'))

        # ---- Tacker's storage steps, redirected -------------------------

        def _install_storage_server(self, context, vnf_instance, proxy,
                                    ss_installation_params):
            call = self._call_or_refuse('_install_storage_server')
            self._run(call, call['operation'],
                      call['target'] + ['--tags', STORAGE_TAGS])

        def _install_nfs_client(self, node_username, node_password,
                                node_ip):
            LOG.debug('heatsible kubeadm: NFS client on %s: heatsible\'s '
                      'nfs_client role does it', node_ip)

        def _register_persistent_volumes(
                self, context, vnf_instance, commander, master_username,
                master_password, master_ip, pv_registration_params):
            self._call_or_refuse('_register_persistent_volumes')
            LOG.debug('heatsible kubeadm: the PVs were registered by '
                      'heatsible\'s pv_register role')

        def _heal_start_storage_server(
                self, context, vnf_instance, vnf_additional_params,
                heatclient, stack_id, target_node_physical_resource_ids,
                master_username, master_password, master_resource_name,
                master_node):
            call = self._call_or_refuse('_heal_start_storage_server')
            if not call.get('storage_done'):
                hs._raise('heatsible kubeadm MgmtDriver: Tacker\'s driver '
                          'heals a storage server heal_start did not '
                          'expect; refused', hs.EXIT_INTERNAL)

        def _heal_end_storage_server(
                self, context, vnf_instance, vnf_additional_params,
                stack_id, master_node, master_resource_name, heatclient,
                target_node_physical_resource_ids, master_username,
                master_password):
            call = self._call_or_refuse('_heal_end_storage_server')
            self._run(call, 'heal-end',
                      ['--storage-server', '--tags', STORAGE_TAGS])

        # ---- the hooks ---------------------------------------------------

        def instantiate_end(self, context, vnf_instance,
                            instantiate_vnf_request, grant,
                            grant_request, **kwargs):
            params = self._hs._additional_params(
                instantiate_vnf_request,
                hs._get(vnf_instance, 'instantiated_vnf_info'))
            with self._storage_call('instantiate-end', [], context,
                                    vnf_instance, params, kwargs):
                return super().instantiate_end(
                    context, vnf_instance, instantiate_vnf_request, grant,
                    grant_request, **kwargs)

        def heal_start(self, context, vnf_instance,
                       heal_vnf_request, grant,
                       grant_request, **kwargs):
            info = hs._get(vnf_instance, 'instantiated_vnf_info')
            params = self._hs._action_params(heal_vnf_request, info)
            with self._storage_call('heal-start', [], context, vnf_instance,
                                    params, kwargs) as call:
                if not hs._get(heal_vnf_request, 'vnfc_instance_id'):
                    # Tacker deletes its Kubernetes VIM; then heatsible's
                    # clean-up, as HeatsibleMgmtDriver does
                    result = super().heal_start(
                        context, vnf_instance, heal_vnf_request, grant,
                        grant_request, **kwargs)
                    self._run(call, 'heal-start', ['--cluster'])
                    return result
                # The same split Tacker's driver makes (by storage_server's
                # nic_cp_name), so both act on the same VNFCs.
                nodes, storage = self._get_target_physical_resource_ids(
                    vnf_instance, heal_vnf_request)
                if self._has_storage(params):
                    for server in hs._unique(nodes):
                        self._check_node_heal(call, server)
                if storage:
                    self._run(call, 'heal-start',
                              ['--storage-server', '--tags', STORAGE_TAGS])
                    call['storage_done'] = True
                return super().heal_start(
                    context, vnf_instance, heal_vnf_request, grant,
                    grant_request, **kwargs)

        def _check_node_heal(self, call, server):
            """Refuse now what heatsible would refuse at heal_end."""
            h = self._hs
            vnf_instance, kwargs = call['vnf_instance'], call['kwargs']
            stack = h._stack_id(vnf_instance, kwargs)
            pkg = h._package_dir(call['context'], vnf_instance, kwargs)

            def tail(req):
                argv = ['plan', 'heal-end', '--vnfc-resource-id', server,
                        '--tags', 'nfs_client', '--request', req]
                if pkg:
                    argv += ['--package', pkg]
                return argv + ['--stack', stack, '-o', 'json']
            h._heatsible('plan heal-end (before Tacker removes the node)',
                         tail, call['params'])

        def heal_end(self, context, vnf_instance,
                     heal_vnf_request, grant,
                     grant_request, **kwargs):
            info = hs._get(vnf_instance, 'instantiated_vnf_info')
            params = self._hs._action_params(heal_vnf_request, info)
            if not hs._get(heal_vnf_request, 'vnfc_instance_id'):
                # Tacker's heal_end calls instantiate_end: its storage step
                # is this heal's
                with self._storage_call('heal-end', ['--cluster'], context,
                                        vnf_instance, params, kwargs):
                    return super().heal_end(
                        context, vnf_instance, heal_vnf_request, grant,
                        grant_request, **kwargs)
            with self._storage_call('heal-end', [], context, vnf_instance,
                                    params, kwargs) as call:
                result = super().heal_end(
                    context, vnf_instance, heal_vnf_request, grant,
                    grant_request, **kwargs)
                if not self._has_storage(params):
                    return result
                # now compute_resource.resource_id is the new server's
                nodes, _ = self._get_target_physical_resource_ids(
                    vnf_instance, heal_vnf_request)
                for server in hs._unique(nodes):
                    self._run(call, 'heal-end',
                              ['--vnfc-resource-id', server,
                               '--tags', 'nfs_client'])
                return result

        def scale_end(self, context, vnf_instance,
                      scale_vnf_request, grant,
                      grant_request, **kwargs):
            info = hs._get(vnf_instance, 'instantiated_vnf_info')
            params = self._hs._action_params(scale_vnf_request, info)
            with self._storage_call('scale-end', [], context, vnf_instance,
                                    params, kwargs) as call:
                result = super().scale_end(
                    context, vnf_instance, scale_vnf_request, grant,
                    grant_request, **kwargs)
                k8s = params.get('k8s_cluster_installation_param') or {}
                worker = hs._get(k8s.get('worker_node'), 'aspect_id')
                new = hs._unique(kwargs.get('scale_out_id_list') or [])
                if hs._get(scale_vnf_request, 'type') != 'SCALE_OUT' or \
                        not self._has_storage(params) or not new or \
                        hs._get(scale_vnf_request, 'aspect_id') != worker:
                    return result
                self._run(call, 'scale-end',
                          ['--nodes', ','.join(new), '--tags', 'nfs_client'])
                return result

        def terminate_start(self, context, vnf_instance,
                            terminate_vnf_request, grant,
                            grant_request, **kwargs):
            # save the topology for terminate_end (never fails)
            self._hs.terminate_start(context, vnf_instance,
                                     terminate_vnf_request, grant,
                                     grant_request, **kwargs)
            return super().terminate_start(
                context, vnf_instance, terminate_vnf_request, grant,
                grant_request, **kwargs)

        def terminate_end(self, context, vnf_instance,
                          terminate_vnf_request, grant,
                          grant_request, **kwargs):
            # Tacker deletes its Kubernetes VIM, then heatsible cleans up
            result = super().terminate_end(
                context, vnf_instance, terminate_vnf_request, grant,
                grant_request, **kwargs)
            self._hs.terminate_end(context, vnf_instance,
                                   terminate_vnf_request, grant,
                                   grant_request, **kwargs)
            return result

    return HeatsibleKubeadmMgmtDriver


def _tacker_base():  # pragma: no cover - depends on Tacker being there
    try:
        module = importlib.import_module(TACKER_MODULE)
        return module.KubernetesMgmtDriver
    except Exception as e:  # ImportError, or anything its imports raise
        _MissingKubernetesMgmtDriver.import_error = e
        return _MissingKubernetesMgmtDriver


HeatsibleKubeadmMgmtDriver = make_driver_class(_tacker_base())
