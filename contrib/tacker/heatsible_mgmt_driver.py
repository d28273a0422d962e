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

"""A thin Tacker (vnflcm v1) MgmtDriver that calls heatsible.

Everything real happens in ``heatsible run ... -o json``; this module only
turns Tacker's hook arguments into heatsible's inputs and heatsible's exit
code into a Tacker exception. See docs/hooks.md in the heatsible repository.

What it maps:

  instantiate_end                  -> run instantiate-end --vim-info FILE,
                                      then the cluster registered as
                                      Tacker's Kubernetes VIM (below)
  heal_start, no VNFC ids (whole VNF)
                                   -> run heal-start --cluster, then the
                                      VIM removed
  heal_end, no VNFC ids            -> run heal-end --cluster --vim-info FILE,
                                      then the VIM registered again
  heal_start / heal_end, VNFC ids  -> per VNFC, storage server first:
      the storage server           -> run heal-...  --storage-server (once)
      any other VNFC (master/worker)
                                   -> run heal-...  --vnfc-resource-id <its
                                      compute_resource.resource_id>, one run
                                      per VNFC, stopping at the first failure
  scale_start, SCALE_IN of the worker aspect
                                   -> run scale-start --nodes <victims>
                                      (kwargs scale_name_list: Heat member
                                      resource names; else scale_out_id_list)
  scale_start, SCALE_OUT with scale_name_list (Tacker's rollback of a
      completed scale-out)         -> run scale-start --nodes <those members>
  scale_end, SCALE_OUT of the worker aspect
                                   -> run scale-end --nodes <kwargs
                                      scale_out_id_list: new member stack ids>
  scale_* of the master aspect     -> raises, nothing is run (heatsible scales
                                      workers only)
  scale_* of any other aspect      -> logs, nothing is run (not the cluster's)
  terminate_start                  -> topology --stack ... --save FILE (so that
                                      terminate_end can name the cluster once
                                      the stack is gone); never fails the
                                      termination
  terminate_end                    -> the VIM removed, then
                                      run terminate-end --topology FILE

Tacker's Kubernetes VIM (docs/hooks.md; what Tacker's kubernetes_mgmt.py
does in _create_vim, terminate_end and heal_start): heatsible writes the API
server, CA and a ServiceAccount's bearer token to the --vim-info file (0600,
in the same private directory as the request, removed in finally); the shim
registers it with Tacker's NfvoPlugin under additionalParams'
vim_name (default kubernetes_vim_<VNF instance id>, as Tacker's drivers),
appends a vimConnectionInfo entry (never first: Tacker takes entry [0] as
the VNF's OpenStack VIM) and saves the VNF instance. A vim_name that
another cluster registered in the project is refused before heatsible runs.
HEATSIBLE_REGISTER_VIM=0 turns all of this off.

instantiate_start, change_external_connectivity_*, modify_information_* log
one line and return: heatsible has nothing to do there.

Assumptions about Tacker that this file makes (read from Tacker's source,
openstack/tacker: tacker/vnflcm/vnflcm_driver.py, the OpenStack infra driver
and samples/mgmt_driver/kubernetes/kubernetes_mgmt.py and
kubespray/kubespray_mgmt.py;
checked on a running Tacker 16.0.0 on heatsible's test bed by internal/e2e
TestTacker: instantiate, its retry, a refused request and its rollback,
worker heal, scale out and in, a failed scale-out and its rollback,
storage-server heals, heal of the whole VNF and terminate in
v1_operations and v1_retry_storage_heals):

* ``vnf_instance.instantiated_vnf_info.instance_id`` is the Heat stack id of
  the VNF (Tacker's own kubernetes_mgmt.py sample uses it as the stack id).
* The extracted VNF package is at
  ``tacker.vnflcm.utils._get_vnf_package_path(context, vnf_instance.vnfd_id)``
  (a private helper the Tacker samples use). ``HEATSIBLE_PACKAGE_DIR``, or a
  ``package_dir`` keyword argument, overrides it.
* The instantiate request's additionalParams are
  ``instantiate_vnf_request.additional_params`` at instantiate_end, and are
  kept as ``vnf_instance.instantiated_vnf_info.additional_params`` for heal,
  scale and terminate; a heal/scale/terminate request's own additionalParams
  are merged into them as Tacker's samples merge them (_action_params).
* A heal request without ``vnfc_instance_id`` heals the whole VNF; with ids,
  each id is matched against ``instantiated_vnf_info.vnfc_resource_info[].id``;
  the storage server is the VNFC one of whose ``vnfc_cp_info[].cpd_id`` is
  ``storage_server.nic_cp_name`` (as kubernetes_mgmt.py tells it), or, for a
  VNFC without CP info, whose ``vdu_id`` is ``storage_server``
  (``HEATSIBLE_STORAGE_VDU_IDS``, comma-separated, overrides it); a node's
  ``compute_resource.resource_id`` is
  the Nova server id (at heal_end, Tacker's post_heal_vnf has already set it
  to the new server's id).
* Scale: Tacker computes the members itself and passes them as keyword
  arguments: scale_start (SCALE_IN) gets ``scale_name_list`` (the victims'
  Heat member resource names) and ``scale_out_id_list`` (their nested stack
  ids); scale_end (SCALE_OUT) gets ``scale_out_id_list`` (the new members'
  nested stack ids). ``scale_vnf_request.aspect_id`` is compared with
  ``master_node.aspect_id`` / ``worker_node.aspect_id`` of the request.
* Terminate: terminate_end is called after the Heat stack was deleted and
  ``instance_id`` was cleared, so the stack cannot be read there: the
  cluster is saved with ``heatsible topology --save`` at terminate_start.
  Disproved for the rollback of an instantiation (Tacker 16.0.0): the stack
  is deleted, terminate_start is not called and instance_id is still set;
  terminate_end then tolerates heatsible's exit code 5 (stack unreadable)
  and 2 (the request that failed the instantiation, refused again).
* Heal of a VNFC replaces its volumes too unless Tacker is told otherwise
  ([vnf_lcm] heal_vnfc_block_storage, additionalParams
  tacker_extension_heal_include_block_storage; always before Tacker 14):
  heal_start refuses that for the storage server before anything runs.

Configuration, from tacker-conductor's environment (or the class attributes):

  HEATSIBLE_BIN           the heatsible executable (default: heatsible on PATH)
  HEATSIBLE_ANSIBLE_HOST  --ansible-host ADDR, or "local" for --local
                          (default: the request's ansible.ip_address, and
                          --local when the request has no "ansible")
  HEATSIBLE_REGISTER_VIM  0: no --vim-info, no VIM registration or removal
  HEATSIBLE_KNOWN_HOSTS   known_hosts file for the Ansible host and every node
                          (passed as --known-hosts; default: heatsible's own,
                          ~/.ssh/known_hosts of the conductor's user)
  HEATSIBLE_WAIT          passed as --wait: bounds of the roles' waits for a
                          slow cloud, e.g. "cloud-init=20m,api=300" (names:
                          heatsible run --help, "Waits")
  HEATSIBLE_TIMEOUT       seconds before one heatsible run is stopped (default
                          3600): heatsible gets SIGTERM (it then stops Ansible
                          and removes its staging directory, exit code 130),
                          and SIGKILL only if it has not ended 120 s later
  HEATSIBLE_TOPOLOGY_DIR  where terminate_start saves the topology for
                          terminate_end (default: STATE/tacker-topology)
  HEATSIBLE_STATE_DIR     passed through: where heatsible keeps locks and run
                          records (see heatsible's README, "Run records")
  OS_CLOUD / OS_*         passed through: heatsible reads Heat with them. This
                          shim does NOT derive credentials from the VIM
                          (vim_connection_info); give the conductor a
                          clouds.yaml and OS_CLOUD.

Secrets: the additionalParams (they hold the VMs' and the Ansible host's
passwords) are written to a 0600 file in a private 0700 directory, given to
heatsible by path only, and removed in ``finally``. No password is ever put in
heatsible's argv.
"""

import copy
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import uuid

# Tacker is imported lazily or guarded, so that this file compiles and its
# tests run without Tacker installed (python3 -m py_compile, unittest).
try:  # pragma: no cover - only inside Tacker
    from oslo_log import log as _oslo_log
    LOG = _oslo_log.getLogger(__name__)
except ImportError:
    LOG = logging.getLogger(__name__)

try:  # pragma: no cover - only inside Tacker
    from tacker.vnfm.mgmt_drivers import vnflcm_abstract_driver as _abstract
    _Base = _abstract.VnflcmMgmtAbstractDriver
except ImportError:
    _Base = object


# heatsible's exit codes (README "Exit codes"; they never change meaning).
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INVALID = 2
EXIT_UNREACHABLE = 3
EXIT_TASK_FAILED = 4
EXIT_OPENSTACK = 5
EXIT_REFUSED = 6
EXIT_INTERRUPTED = 130

EXIT_MEANING = {
    EXIT_INTERNAL: "internal error",
    EXIT_INVALID: "invalid input (nothing was touched)",
    EXIT_UNREACHABLE: "a host could not be reached or authenticated, "
                      "or its host key is unknown or changed",
    EXIT_TASK_FAILED: "a task failed on at least one host",
    EXIT_OPENSTACK: "OpenStack/Heat could not be read",
    EXIT_REFUSED: "refused for safety (a Bound/Released PV, "
                  "or the cluster is busy with another operation)",
    EXIT_INTERRUPTED: "interrupted",
}


class HeatsibleError(Exception):
    """heatsible failed. Carries its exit code and JSON documents.

    Raised as such only outside Tacker; inside Tacker, _raise() raises
    tacker.common.exceptions.MgmtDriverOtherError with the same message.
    """

    def __init__(self, message, exit_code=None, result=None, error=None):
        super().__init__(message)
        self.exit_code = exit_code
        self.result = result or {}   # stdout's document (when Ansible ran)
        self.error = error or {}     # stderr's error document

    @property
    def retryable(self):
        # 3 (unreachable) and 6 (busy / refused) may pass on their own or
        # after an operator's fix; 2 and 5 will not pass without a change.
        return self.exit_code in (EXIT_UNREACHABLE, EXIT_REFUSED)


def _concurrency():
    """What runs this process's threads: eventlet's monkey-patching or not
    (Tacker 16's conductor: oslo.service's threading backend; earlier ones:
    eventlet). Logged with every run, so a conductor's log says it."""
    patched = []
    try:
        from eventlet import patcher
        patched = [m for m in ('os', 'select', 'socket', 'thread', 'time',
                               'subprocess') if patcher.is_monkey_patched(m)]
    except ImportError:
        pass
    return ('eventlet-patched: %s' % ','.join(patched) if patched
            else 'not eventlet-patched')


def _raise(message, exit_code=None, result=None, error=None):
    """Raise Tacker's MgmtDriverOtherError if Tacker is there, else ours."""
    try:  # pragma: no cover - only inside Tacker
        from tacker.common import exceptions as tacker_exceptions
    except ImportError:
        raise HeatsibleError(message, exit_code, result, error)
    raise tacker_exceptions.MgmtDriverOtherError(error_message=message)


def _last_json_object(text):
    """The last top-level JSON object in text, or {}.

    heatsible -o json prints its error document (ok, exit_code, error,
    problems) on stderr, after progress lines such as
    "heatsible: instantiate-end: reading the cluster...".
    """
    decoder = json.JSONDecoder()
    found = {}
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found = obj
        i = text.find("{", end)
    return found


# What a heal/scale/terminate request's k8s_cluster_installation_param may
# replace (Tacker's kubespray_mgmt.py takes exactly these from it).
OVERLAY_KEYS = ('master_node', 'worker_node', 'proxy', 'ansible',
                'external_lb_param')


def _get(obj, name, default=None):
    """obj.name or obj[name]: Tacker objects and plain dicts alike."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _unique(items):
    """items without empty or repeated entries, in their order."""
    out = []
    for i in items:
        if i and i not in out:
            out.append(i)
    return out


def _default_state_dir():
    """heatsible's own default for HEATSIBLE_STATE_DIR."""
    if os.environ.get('HEATSIBLE_STATE_DIR'):
        return os.environ['HEATSIBLE_STATE_DIR']
    if hasattr(os, 'geteuid') and os.geteuid() == 0:
        return '/var/lib/heatsible'
    return os.path.expanduser('~/.local/state/heatsible')


# Marks on a VIM the shim registered (the VIM's "extra"): which VNF instance
# and cluster it is for, and a digest of what it was registered with, so that
# a re-run changes nothing and a VIM of the same name that belongs to
# another cluster is never replaced or deleted.
VIM_OWNER_KEY = 'heatsible_vnf_instance_id'
VIM_CLUSTER_KEY = 'heatsible_cluster'
VIM_DIGEST_KEY = 'heatsible_digest'


class TackerVims(object):
    """Tacker's VIM registry, reached as Tacker's Kubernetes MgmtDriver does.

    kubernetes_mgmt.py creates and deletes its VIM with NfvoPlugin's
    create_vim/delete_vim and appends an objects.VimConnectionInfo; this
    class does the same (with get_vims to list the VIMs of one name, as the
    name is unique per project, not globally). Everything Tacker-specific is
    here, so that the shim's logic can be tested with a fake.
    """

    def __init__(self):
        self._plugin = None

    def _nfvo(self):  # pragma: no cover - only inside Tacker
        if self._plugin is None:
            from tacker.nfvo.nfvo_plugin import NfvoPlugin
            self._plugin = NfvoPlugin()
        return self._plugin

    def find(self, context, name):
        """The VIMs named name in context's project, as Tacker's dicts."""
        # CommonDbMixin._apply_filters_to_query wraps each filter value in a
        # list itself: the value is the name, not a list of names.
        vims = self._nfvo().get_vims(context, filters={'name': name})
        project = getattr(context, 'project_id', None)
        return [v for v in vims if v.get('name') == name and (
            not project or v.get('tenant_id') == project)]

    def create(self, context, body):
        return self._nfvo().create_vim(context, body)

    def delete(self, context, vim_id):
        self._nfvo().delete_vim(context, vim_id)

    @staticmethod
    def connection_info(vim_id, server):  # pragma: no cover - Tacker only
        from tacker import objects
        return objects.VimConnectionInfo(
            id=str(uuid.uuid4()), vim_id=vim_id, vim_type='kubernetes',
            access_info={'auth_url': server}, interface_info=None, extra={})


class HeatsibleMgmtDriver(_Base):

    # Overridable per deployment (subclass, or the environment).
    heatsible_bin = None
    known_hosts = None
    timeout = None
    storage_vdu_ids = None
    topology_dir = None
    ansible_host = None
    register_vim = None
    # Tacker's VIM registry (TackerVims below); tests put a fake here.
    vims = None
    # (key, default) of Tacker's v1 heal block-storage toggle; None: read
    # tacker.conf's [vnf_lcm] as the conductor has it (tests set it).
    heal_block_storage_conf = None

    # Tacker keys MgmtDrivers by get_type(): it is the name used in
    # tacker.conf's vnflcm_mgmt_driver, the setup.cfg entry point and the
    # VNFD's Vnflcm "implementation" (as Tacker's samples do it).
    def get_type(self):
        return 'mgmt-drivers-heatsible'

    def get_name(self):
        return 'mgmt-drivers-heatsible'

    def get_description(self):
        return 'Tacker VNF LCM MgmtDriver that runs heatsible'

    # ---- configuration -------------------------------------------------

    def _bin(self):
        return (self.heatsible_bin or os.environ.get('HEATSIBLE_BIN')
                or 'heatsible')

    def _known_hosts(self):
        return self.known_hosts or os.environ.get('HEATSIBLE_KNOWN_HOSTS')

    def _timeout(self):
        if self.timeout:
            return float(self.timeout)
        return float(os.environ.get('HEATSIBLE_TIMEOUT', '3600'))

    def _where(self, params):
        """Where Ansible runs: heatsible's --ansible-host / --local flags.

        HEATSIBLE_ANSIBLE_HOST (or the class attribute ansible_host): an
        address for --ansible-host, or "local" for --local. Otherwise the
        request's ansible.ip_address, and --local when it has none (Tacker's
        PV guide request has no "ansible": heatsible would refuse with exit
        code 2 without one of the two).
        """
        host = self.ansible_host or os.environ.get('HEATSIBLE_ANSIBLE_HOST')
        if host == 'local':
            return ['--local']
        if host:
            return ['--ansible-host', host]
        k8s = (params or {}).get('k8s_cluster_installation_param') or {}
        if _get(k8s.get('ansible'), 'ip_address'):
            return []
        return ['--local']

    def _vim_enabled(self):
        if self.register_vim is not None:
            return bool(self.register_vim)
        return os.environ.get('HEATSIBLE_REGISTER_VIM', '1') not in (
            '0', 'false', 'no', '')

    def _storage_vdus(self):
        if self.storage_vdu_ids:
            return set(self.storage_vdu_ids)
        raw = os.environ.get('HEATSIBLE_STORAGE_VDU_IDS', 'storage_server')
        return {v.strip() for v in raw.split(',') if v.strip()}

    def _topology_file(self, vnf_instance):
        """Where terminate_start saves the cluster for terminate_end."""
        d = (self.topology_dir or os.environ.get('HEATSIBLE_TOPOLOGY_DIR')
             or os.path.join(_default_state_dir(), 'tacker-topology'))
        vnf_id = str(_get(vnf_instance, 'id') or '')
        safe = ''.join(c for c in vnf_id if c.isalnum() or c in '-_.')
        if not safe or safe != vnf_id:
            _raise('heatsible: the VNF instance id %r cannot name a file'
                   % vnf_id, EXIT_INVALID)
        return os.path.join(d, safe + '.topology.yaml')

    # ---- what Tacker gives us ------------------------------------------

    def _stack_id(self, vnf_instance, kwargs):
        # ASSUMPTION: the VNF's Heat stack id is instantiated_vnf_info's
        # instance_id (as in Tacker's kubernetes_mgmt.py sample).
        stack = kwargs.get('stack_id') or _get(
            _get(vnf_instance, 'instantiated_vnf_info'), 'instance_id')
        if not stack:
            _raise('heatsible: no Heat stack id: '
                   'vnf_instance.instantiated_vnf_info.instance_id is empty')
        return stack

    def _package_dir(self, context, vnf_instance, kwargs):
        pkg = kwargs.get('package_dir') or os.environ.get(
            'HEATSIBLE_PACKAGE_DIR')
        if pkg:
            return pkg
        try:  # pragma: no cover - only inside Tacker
            from tacker.vnflcm import utils as vnflcm_utils
        except ImportError:
            _raise('heatsible: cannot find the VNF package directory: '
                   'Tacker is not importable; set HEATSIBLE_PACKAGE_DIR')
        # ASSUMPTION: a private Tacker helper; it returns
        # CONF.vnf_package.vnf_package_csar_path/<package id>.
        return vnflcm_utils._get_vnf_package_path(  # pragma: no cover
            context, vnf_instance.vnfd_id)

    @staticmethod
    def _additional_params(*sources):
        """The first source that has k8s_cluster_installation_param."""
        for src in sources:
            params = _get(src, 'additional_params')
            if params and 'k8s_cluster_installation_param' in params:
                return copy.deepcopy(dict(params))
        _raise('heatsible: no additionalParams.k8s_cluster_installation_param '
               'in the request or the instantiated VNF', EXIT_INVALID)

    def _action_params(self, request, info):
        """The parameters of a heal, scale or terminate, merged as Tacker does.

        The base is what the VNF was instantiated with
        (instantiated_vnf_info.additional_params). A request's
        k8s_cluster_installation_param replaces the sub-objects Tacker's
        samples take from it (kubespray_mgmt.py's _get_initial_parameters
        and heal_end: master_node, worker_node, proxy, ansible,
        external_lb_param), and master_node_username/_password,
        worker_node_username/_password in the request's additionalParams
        replace the nodes' credentials (kubernetes_mgmt.py's
        _get_username_pwd). storage_server and pv_registration_params always
        come from the instantiation, as in kubernetes_mgmt.py.
        """
        params = self._additional_params(info, request)
        req = _get(request, 'additional_params') or {}
        if not isinstance(req, dict) or req is _get(info, 'additional_params'):
            return params
        k8s = params['k8s_cluster_installation_param'] = dict(
            params['k8s_cluster_installation_param'])
        overlay = req.get('k8s_cluster_installation_param') or {}
        if isinstance(overlay, dict):
            for key in OVERLAY_KEYS:
                if key in overlay:
                    k8s[key] = copy.deepcopy(overlay[key])
        for role in ('master', 'worker'):
            user = req.get(role + '_node_username')
            password = req.get(role + '_node_password')
            if user and password:
                node = dict(k8s.get(role + '_node') or {})
                node.update(username=user, password=password)
                k8s[role + '_node'] = node
        return params

    def _is_storage_server(self, vnfc, params):
        """Whether a VNFC is the storage server, told as Tacker tells it.

        Tacker's kubernetes_mgmt.py (_get_target_physical_resource_ids)
        takes the VNFC one of whose vnfc_cp_info[].cpd_id is
        storage_server.nic_cp_name. A VNFC without CP info (or a request
        without nic_cp_name) is told by its vdu_id instead
        (HEATSIBLE_STORAGE_VDU_IDS, default storage_server).
        """
        k8s = params.get('k8s_cluster_installation_param') or {}
        cp_name = _get(k8s.get('storage_server'), 'nic_cp_name')
        cps = _get(vnfc, 'vnfc_cp_info') or []
        if cp_name and cps:
            return any(_get(cp, 'cpd_id') == cp_name for cp in cps)
        return _get(vnfc, 'vdu_id') in self._storage_vdus()

    def _heal_targets(self, vnf_instance, ids, params):
        """heatsible's target flags, one list per run: storage server first.

        Every VNFC id is checked before anything runs.
        """
        info = _get(vnf_instance, 'instantiated_vnf_info')
        vnfcs = {_get(v, 'id'): v
                 for v in (_get(info, 'vnfc_resource_info') or [])}
        storage = False
        servers = []
        for i in _unique(ids):
            vnfc = vnfcs.get(i)
            if vnfc is None:
                _raise('heatsible: heal: VNFC %s is not in the VNF '
                       '(instantiated_vnf_info.vnfc_resource_info); '
                       'nothing was run' % i, EXIT_INVALID)
            if self._is_storage_server(vnfc, params):
                storage = True
                continue
            server = _get(_get(vnfc, 'compute_resource'), 'resource_id')
            if not server:
                _raise('heatsible: heal: VNFC %s (VDU %s) has no '
                       'compute_resource.resource_id; nothing was run' % (
                           i, _get(vnfc, 'vdu_id')), EXIT_INVALID)
            servers.append(server)
        targets = [['--storage-server']] if storage else []
        return targets + [['--vnfc-resource-id', s]
                          for s in _unique(servers)]

    def _block_storage_conf(self):
        """(key, default, where) of Tacker's v1 heal block-storage toggle.

        Tacker 14 added [vnf_lcm] heal_vnfc_block_storage (default true)
        and heal_include_block_storage_key (default
        tacker_extension_heal_include_block_storage); the OpenStack infra
        driver's heal_vnf marks a healed VNFC's volumes unhealthy too when
        ``additional_params.get(key, heal_vnfc_block_storage)`` is true.
        Before 14 it always did: a Tacker without the options is taken to
        replace them.
        """
        if self.heal_block_storage_conf is not None:
            key, default = self.heal_block_storage_conf
            return key, default, 'the shim\'s heal_block_storage_conf'
        try:  # pragma: no cover - only inside Tacker
            from oslo_config import cfg
            conf = cfg.CONF.vnf_lcm
            return (conf.heal_include_block_storage_key,
                    conf.heal_vnfc_block_storage,
                    "tacker.conf [vnf_lcm] heal_vnfc_block_storage")
        except Exception:  # noqa: BLE001 - no Tacker, or one before 14
            return None, True, 'a Tacker before 14 (no [vnf_lcm] heal_vnfc_block_storage)'

    @staticmethod
    def _delete_released(heal_vnf_request):
        """The heal request's additionalParams.heatsible_delete_released.

        JSON true: the operator acknowledges the Released PVs (Retain PVs
        whose claim was deleted) so that heal_start of the storage server
        unregisters them too (heatsible's --delete-released; their data
        stays on the export). Anything but a JSON boolean is refused.
        """
        req = _get(heal_vnf_request, 'additional_params') or {}
        if not isinstance(req, dict) or 'heatsible_delete_released' not in req:
            return False
        v = req['heatsible_delete_released']
        if not isinstance(v, bool):
            _raise('heatsible heal_start: additionalParams.heatsible_delete_released '
                   'is %s: want a JSON boolean (true acknowledges the Released '
                   'PVs, which heal_start of the storage server then '
                   'unregisters); nothing was run' % json.dumps(v), EXIT_INVALID)
        return v

    def _refuse_volume_replacement(self, vnf_instance, heal_vnf_request,
                                   ids, params):
        """Refuse, before anything runs, a heal that would recreate the
        storage server's volumes (the PVs' data would be gone).

        Decided exactly as Tacker's OpenStack infra driver decides it
        (heal_vnf, _get_vdu_resources): the request's
        additionalParams[key] if present (Python truth, as Tacker tests
        it), else [vnf_lcm] heal_vnfc_block_storage; the volumes are the
        VNFC's storage_resource_ids found in
        virtual_storage_resource_info.
        """
        key, default, where = self._block_storage_conf()
        req = _get(heal_vnf_request, 'additional_params') or {}
        if key is not None and isinstance(req, dict) and key in req:
            include = bool(req[key])
            why = 'the request has additionalParams.%s = %s' % (
                key, json.dumps(req[key]))
        else:
            include = bool(default)
            why = ('the request does not set additionalParams.%s and %s '
                   'is %s' % (key, where, json.dumps(default))
                   if key else 'this is %s, whose heal always does' % where)
        if not include:
            return
        info = _get(vnf_instance, 'instantiated_vnf_info')
        vnfcs = {_get(v, 'id'): v
                 for v in (_get(info, 'vnfc_resource_info') or [])}
        storages = {_get(v, 'id'): v for v in
                    (_get(info, 'virtual_storage_resource_info') or [])}
        for i in _unique(ids):
            vnfc = vnfcs.get(i)
            if vnfc is None or not self._is_storage_server(vnfc, params):
                continue
            vols = []
            for sid in _get(vnfc, 'storage_resource_ids') or []:
                st = storages.get(sid)
                if st is not None:
                    vols.append('%s (%s)' % (
                        _get(st, 'virtual_storage_desc_id'),
                        _get(_get(st, 'storage_resource'), 'resource_id')))
            if not vols:
                continue
            fix = ('Heal it with additionalParams {"%s": false}' % key
                   if key else 'Upgrade Tacker to 14 or later and heal it '
                   'with additionalParams '
                   '{"tacker_extension_heal_include_block_storage": false}')
            msg = ('heatsible heal_start: healing the storage server (VNFC '
                   '%s) would make Tacker delete and recreate its volume %s '
                   'as well: %s. The PersistentVolumes\' data on it would be '
                   'lost. Refused before anything ran or changed. %s, or set '
                   '[vnf_lcm] heal_vnfc_block_storage = false in tacker.conf '
                   '(docs/hooks.md, "Healing the storage server through '
                   'Tacker")' % (i, ', '.join(vols), why, fix))
            LOG.error(msg)
            _raise(msg, EXIT_REFUSED)

    def _scale_aspect_is_workers(self, hook, scale_vnf_request, params):
        """True for the worker aspect; raises for the master aspect.

        Any other aspect is not a part of the cluster heatsible manages:
        logged, nothing is run.
        """
        k8s = params.get('k8s_cluster_installation_param') or {}
        aspect = _get(scale_vnf_request, 'aspect_id')
        master = _get(k8s.get('master_node'), 'aspect_id')
        worker = _get(k8s.get('worker_node'), 'aspect_id')
        if aspect and aspect == master:
            msg = ('heatsible %s: aspect %s is the master aspect '
                   '(master_node.aspect_id); heatsible scales workers only '
                   '(kubespray adds control-plane nodes with cluster.yml and '
                   'etcd needs an odd number of members): refused, nothing '
                   'was run' % (hook, aspect))
            LOG.error(msg)
            _raise(msg, EXIT_INVALID)
        if not aspect or aspect != worker:
            LOG.warning('heatsible: %s of aspect %s: not the worker aspect '
                        '(worker_node.aspect_id %s); not a part of the '
                        'cluster, nothing was run', hook, aspect, worker)
            return False
        return True

    # ---- running heatsible ---------------------------------------------

    def _run(self, operation, extra_args, additional_params, source_args,
             package_dir=None, note='', vim_info=False, tolerate=()):
        """heatsible run OPERATION; stdout's JSON document, or raise.

        vim_info: also pass --vim-info FILE and return the file's object as
        the document's "vim" (docs/hooks.md, "Tacker's Kubernetes VIM").
        """
        where = self._where(additional_params)

        def tail(req):
            argv = ['run', operation] + list(extra_args) + ['--request', req]
            if package_dir:
                argv += ['--package', package_dir]
            argv += list(source_args) + where + ['-o', 'json']
            kh = self._known_hosts()
            if kh:
                argv += ['--known-hosts', kh]
            wait = os.environ.get('HEATSIBLE_WAIT')
            if wait:
                argv += ['--wait', wait]
            return argv
        label = operation + (' ' + note if note else '')
        return self._heatsible(label, tail, additional_params, vim_info,
                               tolerate)

    def _heatsible(self, label, tail, additional_params, vim_info=False,
                   tolerate=()):
        """Run heatsible with [bin] + tail(request path); return or raise.

        The request goes through a 0600 file in a fresh 0700 directory,
        removed in finally; so does the --vim-info file (it holds the
        bearer token). stdin is /dev/null (heatsible never prompts).
        """
        tmpdir = tempfile.mkdtemp(prefix='heatsible-req-')  # 0700
        req = os.path.join(tmpdir, 'request.json')
        vim_path = os.path.join(tmpdir, 'vim.json')
        try:
            fd = os.open(req, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'w') as f:
                json.dump(additional_params, f)
            argv = [self._bin()] + tail(req)
            if vim_info:
                argv += ['--vim-info', vim_path]
            LOG.info('heatsible: running %s (pid %d, %s)', ' '.join(argv),
                     os.getpid(), _concurrency())
            try:
                proc = self._call(argv)
            except subprocess.TimeoutExpired:
                _raise('heatsible %s: timed out after %gs and was stopped '
                       '(SIGTERM); see its run record on this host' % (
                           label, self._timeout()))
            except OSError as e:
                _raise('heatsible %s: cannot run %s: %s' % (
                    label, argv[0], e))
            if proc.returncode in tolerate:
                LOG.warning('heatsible %s: exit code %d (%s), tolerated here: '
                            '%s', label, proc.returncode,
                            EXIT_MEANING.get(proc.returncode),
                            (_last_json_object(proc.stderr or '').get('error')
                             or '').strip())
                return None
            result = self._result(label, proc)
            if vim_info:
                result['vim'] = self._read_vim_info(label, vim_path, result)
            return result
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    @staticmethod
    def _read_vim_info(label, path, result):
        """The --vim-info file's object (0600), else stdout's "vim"."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            vim = result.get('vim')
            if isinstance(vim, dict):
                return vim
            _raise('heatsible %s: succeeded but wrote no --vim-info file '
                   'and printed no "vim" object: the Kubernetes VIM cannot '
                   'be registered (is this heatsible older than '
                   'docs/hooks.md\'s VIM contract?)' % label, EXIT_INTERNAL)
        if st.st_mode & 0o077:
            _raise('heatsible %s: its --vim-info file has mode %o, not 0600: '
                   'refusing to use a bearer token others could read'
                   % (label, st.st_mode & 0o777), EXIT_INTERNAL)
        with open(path) as f:
            try:
                vim = json.load(f)
            except ValueError as e:
                _raise('heatsible %s: its --vim-info file is not JSON: %s'
                       % (label, e), EXIT_INTERNAL)
        if not isinstance(vim, dict):
            _raise('heatsible %s: its --vim-info file holds no JSON object'
                   % label, EXIT_INTERNAL)
        return vim

    def _call(self, argv):
        """subprocess.run, but stopping heatsible gently on timeout.

        subprocess.run(timeout=) would SIGKILL it: its lock (an flock) would
        still be released, but the staging directory on the Ansible host
        would stay. SIGTERM lets heatsible stop Ansible and clean up.
        """
        p = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True)
        try:
            out, err = p.communicate(timeout=self._timeout())
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
            raise
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    @staticmethod
    def _result(operation, proc):
        # stdout: the recap document, only when Ansible ran (ok, exit_code,
        # operation, cluster, where, check, recap, changed, changed_hosts,
        # seconds, record). stderr: progress lines and, on failure, the error
        # document (ok, exit_code, error[, problems]).
        result = _last_json_object(proc.stdout or '')
        error = _last_json_object(proc.stderr or '')
        code = proc.returncode
        if code == EXIT_OK:
            if 'record' in result:
                LOG.info('heatsible %s: ok, %s changes on %s hosts '
                         '(record %s)', operation, result.get('changed'),
                         result.get('changed_hosts'), result.get('record'))
            else:  # no Ansible run (topology): no recap to tell
                LOG.info('heatsible %s: ok', operation)
            return result
        if code < 0:  # killed by a signal
            code_text = 'killed by signal %d' % -code
        else:
            code_text = 'exit code %d, %s' % (
                code, EXIT_MEANING.get(code, 'unknown exit code'))
        msg = error.get('error') or (proc.stderr or '').strip()[-2000:] \
            or 'no error message'
        # heatsible's error lists its problems already (path: message);
        # only those it does not are added (Tacker showed each one twice)
        problems = ['%s: %s' % (p.get('path'), p.get('message'))
                    for p in (error.get('problems') or [])
                    if isinstance(p, dict)]
        problems = [p for p in problems if p not in msg]
        if problems:
            msg += '; ' + '; '.join(problems)
        LOG.error('heatsible %s failed (%s): %s', operation, code_text, msg)
        _raise('heatsible %s failed (%s): %s' % (operation, code_text, msg),
               code, result, error)

    # ---- Tacker's Kubernetes VIM ---------------------------------------

    def _vim_registry(self):
        if self.vims is None:
            self.vims = TackerVims()
        return self.vims

    @staticmethod
    def _vim_name(vnf_instance, params):
        """vim_name, or Tacker's default kubernetes_vim_<VNF instance id>."""
        k8s = params.get('k8s_cluster_installation_param') or {}
        return k8s.get('vim_name') or (
            'kubernetes_vim_' + str(_get(vnf_instance, 'id')))

    @staticmethod
    def _connections(vnf_instance):
        return list(_get(vnf_instance, 'vim_connection_info') or [])

    def _vims_named(self, context, vnf_instance, name, hook):
        """(ours, theirs): the VIMs called name, this VNF's and the rest.

        Ours: registered by this shim for this VNF instance (its extra says
        so), or referenced by this VNF instance's vimConnectionInfo (e.g.
        registered earlier by Tacker's own Kubernetes MgmtDriver for it).
        """
        try:
            found = list(self._vim_registry().find(context, name))
        except Exception as e:
            _raise('heatsible %s: cannot look up VIM %r in Tacker: %s'
                   % (hook, name, e))
        vnf_id = str(_get(vnf_instance, 'id'))
        linked = {_get(c, 'vim_id') for c in self._connections(vnf_instance)}
        ours, theirs = [], []
        for v in found:
            owner = (v.get('extra') or {}).get(VIM_OWNER_KEY)
            if owner == vnf_id or (owner is None and v.get('id') in linked):
                ours.append(v)
            else:
                theirs.append(v)
        return ours, theirs

    def _refuse_foreign_vim(self, context, vnf_instance, params, hook):
        """Raise if vim_name is taken by another cluster; else return."""
        name = self._vim_name(vnf_instance, params)
        _, theirs = self._vims_named(context, vnf_instance, name, hook)
        if not theirs:
            return
        v = theirs[0]
        extra = v.get('extra') or {}
        whose = ('VNF instance %s, cluster %s' % (
            extra.get(VIM_OWNER_KEY), extra.get(VIM_CLUSTER_KEY))
            if extra.get(VIM_OWNER_KEY) else
            'not registered by heatsible for this VNF instance')
        msg = ('heatsible %s: vim_name %r is already registered in Tacker '
               'for another cluster (VIM %s, auth_url %s, %s): refused, '
               'nothing was run or registered. Give this VNF another '
               'additionalParams.k8s_cluster_installation_param.vim_name, '
               'or delete that VIM if it is stale'
               % (hook, name, v.get('id'), v.get('auth_url'), whose))
        LOG.error(msg)
        _raise(msg, EXIT_REFUSED)

    @staticmethod
    def _check_vim_doc(hook, vim, name):
        """(server, token, ca) from heatsible's "vim" object, checked."""
        def bad(what):
            _raise('heatsible %s: its "vim" object %s; the Kubernetes VIM '
                   'was not registered' % (hook, what), EXIT_INTERNAL)
        server = vim.get('server')
        token = vim.get('bearer_token')
        ca = vim.get('ca_cert') or ''
        if not isinstance(server, str) or not server.startswith('https://') \
                or any(c.isspace() for c in server):
            bad('has no https:// "server"')
        if not isinstance(token, str) or not token or \
                any(c.isspace() for c in token):
            bad('has no usable "bearer_token"')
        if not isinstance(ca, str) or (
                ca and '-----BEGIN CERTIFICATE-----' not in ca):
            bad('has a "ca_cert" that is not a PEM certificate')
        if vim.get('vim_name') not in (None, name):
            bad('names VIM %r, the shim registers %r' % (
                vim.get('vim_name'), name))
        return server, token, ca

    def _register_vim(self, context, vnf_instance, params, vim, hook):
        """Register the cluster as Tacker's Kubernetes VIM under vim_name.

        As kubernetes_mgmt.py's _create_vim: type kubernetes, auth_url the
        API server, auth_cred bearer_token (+ ssl_ca_cert), then one
        vimConnectionInfo entry (vim_type kubernetes, access_info.auth_url)
        appended and the VNF instance saved. Appended, never first: Tacker
        uses vimConnectionInfo[0] as the VNF's OpenStack VIM. A re-run with
        the same server, token and CA changes nothing; a VIM of this VNF
        registered with other values is replaced.
        """
        name = self._vim_name(vnf_instance, params)
        server, token, ca = self._check_vim_doc(hook, vim, name)
        digest = hashlib.sha256('\0'.join(
            [server, token, ca]).encode('utf-8')).hexdigest()
        registry = self._vim_registry()
        ours, theirs = self._vims_named(context, vnf_instance, name, hook)
        if theirs:
            self._refuse_foreign_vim(context, vnf_instance, params, hook)
        keep = None
        stale = []
        for v in ours:
            extra = v.get('extra') or {}
            if keep is None and v.get('auth_url') == server and \
                    extra.get(VIM_DIGEST_KEY) == digest:
                keep = v
            else:
                stale.append(v)
        for v in stale:
            self._delete_vim(context, v, hook)
        if keep is not None:
            vim_id = keep.get('id')
            LOG.info('heatsible %s: Kubernetes VIM %s (%s) is registered '
                     'already, unchanged', hook, name, vim_id)
        else:
            cred = {'bearer_token': token}
            if ca:
                cred['ssl_ca_cert'] = ca
            cluster = vim.get('cluster')
            body = {'vim': {
                'name': name,
                'description': 'Kubernetes cluster %s of VNF instance %s '
                               '(registered by heatsible)' % (
                                   cluster, _get(vnf_instance, 'id')),
                'auth_url': server,
                'vim_project': {'name': 'default'},
                'auth_cred': cred,
                'type': 'kubernetes',
                'tenant_id': getattr(context, 'project_id', None),
                'extra': {
                    VIM_OWNER_KEY: str(_get(vnf_instance, 'id')),
                    VIM_CLUSTER_KEY: cluster,
                    VIM_DIGEST_KEY: digest},
            }}
            try:
                created = registry.create(context, body)
            except Exception as e:
                _raise('heatsible %s: registering Kubernetes VIM %r (%s) '
                       'in Tacker failed: %s' % (hook, name, server, e))
            vim_id = created.get('id')
            LOG.info('heatsible %s: registered Kubernetes VIM %s (%s) for '
                     '%s', hook, name, vim_id, server)
        stale_ids = {v.get('id') for v in stale}
        before = self._connections(vnf_instance)
        after = [c for c in before if _get(c, 'vim_id') not in stale_ids]
        if vim_id not in [_get(c, 'vim_id') for c in after]:
            after.append(registry.connection_info(vim_id, server))
        if len(after) != len(before) or any(
                a is not b for a, b in zip(after, before)):
            vnf_instance.vim_connection_info = after
            vnf_instance.save()
        return vim_id

    def _delete_vim(self, context, vim, hook):
        try:
            self._vim_registry().delete(context, vim.get('id'))
        except Exception as e:
            _raise('heatsible %s: deleting Kubernetes VIM %s (%s) from '
                   'Tacker failed: %s' % (hook, vim.get('name'),
                                          vim.get('id'), e))
        LOG.info('heatsible %s: deleted Kubernetes VIM %s (%s)', hook,
                 vim.get('name'), vim.get('id'))

    def _unregister_vim(self, context, vnf_instance, params, hook):
        """Delete this VNF's VIM called vim_name, and its vimConnectionInfo.

        A VIM of that name that belongs to another cluster is left alone.
        """
        name = self._vim_name(vnf_instance, params)
        ours, theirs = self._vims_named(context, vnf_instance, name, hook)
        for v in theirs:
            LOG.warning('heatsible %s: VIM %r (%s) belongs to another '
                        'cluster; left alone', hook, name, v.get('id'))
        if not ours:
            LOG.info('heatsible %s: no Kubernetes VIM %r of this VNF to '
                     'remove', hook, name)
        for v in ours:
            self._delete_vim(context, v, hook)
        ids = {v.get('id') for v in ours}
        before = self._connections(vnf_instance)
        after = [c for c in before if _get(c, 'vim_id') not in ids]
        if len(after) != len(before):
            vnf_instance.vim_connection_info = after
            vnf_instance.save()

    @staticmethod
    def _masked(result):
        """result without the bearer token (what the hooks return)."""
        vim = result.get('vim')
        if isinstance(vim, dict) and vim.get('bearer_token'):
            result = dict(result)
            result['vim'] = dict(vim, bearer_token='***')
        return result

    def _run_and_register(self, operation, extra, context, vnf_instance,
                          params, source, pkg, hook):
        """A run that ends with the cluster registered as Tacker's VIM."""
        if not self._vim_enabled():
            return self._run(operation, extra, params, source, pkg)
        # refused before anything runs, not after an hour of Ansible
        self._refuse_foreign_vim(context, vnf_instance, params, hook)
        result = self._run(operation, extra, params, source, pkg,
                           vim_info=True)
        self._register_vim(context, vnf_instance, params, result['vim'],
                           hook)
        return self._masked(result)

    @staticmethod
    def _nothing_to_do(hook, why='heatsible has nothing to do there'):
        LOG.info('heatsible: %s: %s; nothing was run', hook, why)

    # ---- the hooks ------------------------------------------------------

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant,
                          grant_request, **kwargs):
        self._nothing_to_do('instantiate_start')

    def instantiate_end(self, context, vnf_instance,
                        instantiate_vnf_request, grant,
                        grant_request, **kwargs):
        params = self._additional_params(
            instantiate_vnf_request,
            _get(vnf_instance, 'instantiated_vnf_info'))
        return self._run_and_register(
            'instantiate-end', [], context, vnf_instance, params,
            ['--stack', self._stack_id(vnf_instance, kwargs)],
            self._package_dir(context, vnf_instance, kwargs),
            'instantiate_end')

    def terminate_start(self, context, vnf_instance,
                        terminate_vnf_request, grant,
                        grant_request, **kwargs):
        # Tacker deletes the stack and clears instance_id before
        # terminate_end: save the cluster now, for terminate_end. A failure
        # here is logged and does not stop the termination (terminate-end
        # only cleans heatsible's state up).
        try:
            path = self._topology_file(vnf_instance)
            params = self._additional_params(
                _get(vnf_instance, 'instantiated_vnf_info'))
            stack = self._stack_id(vnf_instance, kwargs)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            if os.path.exists(path):
                os.remove(path)  # never let terminate_end use a stale one
            return self._heatsible(
                'topology --save', lambda req: [
                    'topology', '--request', req, '--stack', stack,
                    '--save', path, '-o', 'json'], params)
        except Exception as e:
            LOG.error('heatsible: terminate_start: the topology was not '
                      'saved, so terminate_end will not run terminate-end: '
                      '%s', e)
            return None

    def terminate_end(self, context, vnf_instance,
                      terminate_vnf_request, grant,
                      grant_request, **kwargs):
        path = self._topology_file(vnf_instance)
        info = _get(vnf_instance, 'instantiated_vnf_info')
        params = self._action_params(terminate_vnf_request, info)
        # The cluster is gone (Tacker deleted the stack): its VIM goes
        # first, whatever heatsible's clean-up below does.
        if self._vim_enabled():
            self._unregister_vim(context, vnf_instance, params,
                                 'terminate_end')
        if os.path.exists(path):
            source = ['--topology', path]
        elif _get(info, 'instance_id') or kwargs.get('stack_id'):
            source = ['--stack', self._stack_id(vnf_instance, kwargs)]
        else:
            LOG.error(
                'heatsible: terminate_end: no topology saved by '
                'terminate_start (%s) and no Heat stack id: terminate-end '
                'was not run. Left behind: staging directories on the '
                'Ansible host (~/.heatsible/runs/), the kubespray inventory '
                'heatsible wrote, the cluster lock file in heatsible\'s '
                'state directory. Declare terminate_start in the VNFD to '
                'have them removed.', path)
            return None
        # At the rollback of an instantiation Tacker deletes the stack and
        # calls terminate_end without terminate_start, instance_id still
        # set (seen on Tacker 16.0.0): the stack cannot be read any more
        # (exit code 5), and when the instantiation failed because
        # heatsible refused its request (exit code 2), the same request is
        # refused again here (seen on the bed: the rollback ended
        # FAILED_TEMP, and an operator cannot change the parameters of a
        # v1 instantiation). Neither must fail the rollback: said, not
        # raised.
        tolerate = ((EXIT_OPENSTACK, EXIT_INVALID) if source[0] == '--stack'
                    else ())
        result = self._run('terminate-end', [], params, source,
                           self._package_dir(context, vnf_instance, kwargs),
                           tolerate=tolerate)
        if result is None:
            LOG.error(
                'heatsible: terminate_end: no topology saved by '
                'terminate_start (%s), and the Heat stack is gone or the '
                'request is refused (as at the rollback of an '
                'instantiation): terminate-end could not run. Left behind: staging directories on the Ansible host '
                '(~/.heatsible/runs/), the kubespray inventory heatsible '
                'wrote, the cluster lock file in heatsible\'s state '
                'directory.', path)
            return None
        if source[0] == '--topology':
            os.remove(path)
        return result

    def scale_start(self, context, vnf_instance,
                    scale_vnf_request, grant,
                    grant_request, **kwargs):
        # Tacker computed the members Heat is going to remove (from
        # aspect_id, number_of_steps and is_reverse) and passes them:
        # scale_name_list (Heat member resource names) and scale_out_id_list
        # (their nested stack ids). Only scale_name_list comes with the
        # rollback of a completed scale-out (type SCALE_OUT).
        kind = _get(scale_vnf_request, 'type')
        names = list(kwargs.get('scale_name_list') or [])
        if kind == 'SCALE_IN':
            victims = _unique(names or kwargs.get('scale_out_id_list') or [])
            note = ''
        elif kind == 'SCALE_OUT' and names:
            victims = _unique(names)
            note = '(rollback of a scale-out)'
        elif kind == 'SCALE_OUT':
            self._nothing_to_do('scale_start of a scale-out',
                                'heatsible acts at scale_end')
            return None
        else:
            _raise('heatsible scale_start: scale_vnf_request.type %r is '
                   'neither SCALE_IN nor SCALE_OUT' % (kind,), EXIT_INVALID)
        info = _get(vnf_instance, 'instantiated_vnf_info')
        params = self._action_params(scale_vnf_request, info)
        if not self._scale_aspect_is_workers('scale_start', scale_vnf_request,
                                             params):
            return None
        if not victims:
            _raise('heatsible scale_start: Tacker gave no scale-in victims '
                   '(neither scale_name_list nor scale_out_id_list): '
                   'nothing was run, and Heat must not remove workers '
                   'heatsible did not drain', EXIT_INVALID)
        return self._run('scale-start', ['--nodes', ','.join(victims)],
                         params,
                         ['--stack', self._stack_id(vnf_instance, kwargs)],
                         self._package_dir(context, vnf_instance, kwargs),
                         note)

    def scale_end(self, context, vnf_instance,
                  scale_vnf_request, grant,
                  grant_request, **kwargs):
        # Tacker passes the new members' nested stack ids (the group's
        # members after the update minus those before) as scale_out_id_list.
        kind = _get(scale_vnf_request, 'type')
        if kind == 'SCALE_IN':
            self._nothing_to_do('scale_end of a scale-in',
                                'heatsible acted at scale_start')
            return None
        if kind != 'SCALE_OUT':
            _raise('heatsible scale_end: scale_vnf_request.type %r is '
                   'neither SCALE_IN nor SCALE_OUT' % (kind,), EXIT_INVALID)
        info = _get(vnf_instance, 'instantiated_vnf_info')
        params = self._action_params(scale_vnf_request, info)
        if not self._scale_aspect_is_workers('scale_end', scale_vnf_request,
                                             params):
            return None
        new = _unique(kwargs.get('scale_out_id_list') or [])
        if not new:
            self._nothing_to_do('scale_end', 'Tacker gave no new members '
                                '(scale_out_id_list is empty)')
            return None
        return self._run('scale-end', ['--nodes', ','.join(new)], params,
                         ['--stack', self._stack_id(vnf_instance, kwargs)],
                         self._package_dir(context, vnf_instance, kwargs))

    def _heal(self, operation, context, vnf_instance, heal_vnf_request,
              kwargs):
        info = _get(vnf_instance, 'instantiated_vnf_info')
        ids = _get(heal_vnf_request, 'vnfc_instance_id') or []
        params = self._action_params(heal_vnf_request, info)
        targets = (self._heal_targets(vnf_instance, ids, params) if ids
                   else [['--cluster']])
        source = ['--stack', self._stack_id(vnf_instance, kwargs)]
        pkg = self._package_dir(context, vnf_instance, kwargs)
        hook = operation.replace('-', '_')
        if ids and operation == 'heal-start':
            self._refuse_volume_replacement(vnf_instance, heal_vnf_request,
                                            ids, params)
            if self._delete_released(heal_vnf_request):
                targets = [t + ['--delete-released']
                           if t == ['--storage-server'] else t
                           for t in targets]
        if not ids and operation == 'heal-end':
            # the new cluster is Tacker's Kubernetes VIM again
            return self._run_and_register(operation, targets[0], context,
                                          vnf_instance, params, source, pkg,
                                          hook)
        if not ids:
            # as Tacker's drivers: the old cluster's VIM goes at heal_start
            result = self._run(operation, targets[0], params, source, pkg)
            if self._vim_enabled():
                self._unregister_vim(context, vnf_instance, params, hook)
            return result
        # One run per VNFC (heatsible heals one node at a time), in order;
        # the first failure raises and the rest is not run. The message
        # says which runs were done.
        results = []
        for n, target in enumerate(targets, 1):
            note = ''
            if len(targets) > 1:
                note = '(run %d of %d; done: %s)' % (
                    n, len(targets),
                    ', '.join(' '.join(t) for t in targets[:n - 1])
                    or 'none')
            results.append(self._run(operation, target, params, source, pkg,
                                     note))
        return results

    def heal_start(self, context, vnf_instance,
                   heal_vnf_request, grant,
                   grant_request, **kwargs):
        # Never add --delete-released here: acknowledging Released PVs is an
        # operator's decision (docs/runbook.md).
        return self._heal('heal-start', context, vnf_instance,
                          heal_vnf_request, kwargs)

    def heal_end(self, context, vnf_instance,
                 heal_vnf_request, grant,
                 grant_request, **kwargs):
        return self._heal('heal-end', context, vnf_instance,
                          heal_vnf_request, kwargs)

    def change_external_connectivity_start(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        self._nothing_to_do('change_external_connectivity_start')

    def change_external_connectivity_end(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        self._nothing_to_do('change_external_connectivity_end')

    # Newer Tacker releases declare these abstract too.
    def modify_information_start(self, context, vnf_instance,
                                 modify_vnf_request, **kwargs):
        self._nothing_to_do('modify_information_start')

    def modify_information_end(self, context, vnf_instance,
                               modify_vnf_request, **kwargs):
        self._nothing_to_do('modify_information_end')
