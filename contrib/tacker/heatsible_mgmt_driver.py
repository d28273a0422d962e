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

  instantiate_end                  -> run instantiate-end
  heal_start / heal_end, no VNFC ids (whole VNF)
                                   -> run heal-start|heal-end --cluster
  heal_start / heal_end, VNFC ids  -> per VNFC, storage server first:
      the storage server VDU       -> run heal-...  --storage-server (once)
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
  terminate_end                    -> run terminate-end --topology FILE

instantiate_start, change_external_connectivity_*, modify_information_* log
one line and return: heatsible has nothing to do there.

Assumptions about Tacker that this file makes (read from Tacker's source,
openstack/tacker: tacker/vnflcm/vnflcm_driver.py, the OpenStack infra driver
and samples/mgmt_driver/kubernetes/kubernetes_mgmt.py and
kubespray/kubespray_mgmt.py;
not verified against a running Tacker; no Tacker runs where this was written):

* ``vnf_instance.instantiated_vnf_info.instance_id`` is the Heat stack id of
  the VNF (Tacker's own kubernetes_mgmt.py sample uses it as the stack id).
* The extracted VNF package is at
  ``tacker.vnflcm.utils._get_vnf_package_path(context, vnf_instance.vnfd_id)``
  (a private helper the Tacker samples use). ``HEATSIBLE_PACKAGE_DIR``, or a
  ``package_dir`` keyword argument, overrides it.
* The instantiate request's additionalParams are
  ``instantiate_vnf_request.additional_params`` at instantiate_end, and are
  kept as ``vnf_instance.instantiated_vnf_info.additional_params`` for heal,
  scale and terminate.
* A heal request without ``vnfc_instance_id`` heals the whole VNF; with ids,
  each id is matched against ``instantiated_vnf_info.vnfc_resource_info[].id``;
  the VNFC's ``vdu_id`` tells the storage server (``storage_server`` by
  default, as in Tacker's PV usage guide; ``HEATSIBLE_STORAGE_VDU_IDS``,
  comma-separated, overrides it), and its ``compute_resource.resource_id`` is
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

Configuration, from tacker-conductor's environment (or the class attributes):

  HEATSIBLE_BIN           the heatsible executable (default: heatsible on PATH)
  HEATSIBLE_KNOWN_HOSTS   known_hosts file for the Ansible host and every node
                          (passed as --known-hosts; default: heatsible's own,
                          ~/.ssh/known_hosts of the conductor's user)
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

import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile

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


class HeatsibleMgmtDriver(_Base):

    # Overridable per deployment (subclass, or the environment).
    heatsible_bin = None
    known_hosts = None
    timeout = None
    storage_vdu_ids = None
    topology_dir = None

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
                return dict(params)
        _raise('heatsible: no additionalParams.k8s_cluster_installation_param '
               'in the request or the instantiated VNF', EXIT_INVALID)

    def _heal_targets(self, vnf_instance, ids):
        """heatsible's target flags, one list per run: storage server first.

        Every VNFC id is checked before anything runs.
        """
        info = _get(vnf_instance, 'instantiated_vnf_info')
        vnfcs = {_get(v, 'id'): v
                 for v in (_get(info, 'vnfc_resource_info') or [])}
        storage_vdus = self._storage_vdus()
        storage = False
        servers = []
        for i in _unique(ids):
            vnfc = vnfcs.get(i)
            if vnfc is None:
                _raise('heatsible: heal: VNFC %s is not in the VNF '
                       '(instantiated_vnf_info.vnfc_resource_info); '
                       'nothing was run' % i, EXIT_INVALID)
            if _get(vnfc, 'vdu_id') in storage_vdus:
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
             package_dir=None, note=''):
        """heatsible run OPERATION; stdout's JSON document, or raise."""
        def tail(req):
            argv = ['run', operation] + list(extra_args) + ['--request', req]
            if package_dir:
                argv += ['--package', package_dir]
            argv += list(source_args) + ['-o', 'json']
            kh = self._known_hosts()
            if kh:
                argv += ['--known-hosts', kh]
            return argv
        label = operation + (' ' + note if note else '')
        return self._heatsible(label, tail, additional_params)

    def _heatsible(self, label, tail, additional_params):
        """Run heatsible with [bin] + tail(request path); return or raise.

        The request goes through a 0600 file in a fresh 0700 directory,
        removed in finally. stdin is /dev/null (heatsible never prompts).
        """
        tmpdir = tempfile.mkdtemp(prefix='heatsible-req-')  # 0700
        req = os.path.join(tmpdir, 'request.json')
        try:
            fd = os.open(req, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'w') as f:
                json.dump(additional_params, f)
            argv = [self._bin()] + tail(req)
            LOG.info('heatsible: running %s', ' '.join(argv))
            try:
                proc = self._call(argv)
            except subprocess.TimeoutExpired:
                _raise('heatsible %s: timed out after %ss and was stopped '
                       '(SIGTERM); see its run record on this host' % (
                           label, self._timeout()))
            except OSError as e:
                _raise('heatsible %s: cannot run %s: %s' % (
                    label, argv[0], e))
            return self._result(label, proc)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

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
            LOG.info('heatsible %s: ok, %s changes on %s hosts (record %s)',
                     operation, result.get('changed'),
                     result.get('changed_hosts'), result.get('record'))
            return result
        if code < 0:  # killed by a signal
            code_text = 'killed by signal %d' % -code
        else:
            code_text = 'exit code %d, %s' % (
                code, EXIT_MEANING.get(code, 'unknown exit code'))
        msg = error.get('error') or (proc.stderr or '').strip()[-2000:] \
            or 'no error message'
        problems = error.get('problems') or []
        if problems:
            msg += '; ' + '; '.join(
                '%s: %s' % (p.get('path'), p.get('message')) for p in problems)
        LOG.error('heatsible %s failed (%s): %s', operation, code_text, msg)
        _raise('heatsible %s failed (%s): %s' % (operation, code_text, msg),
               code, result, error)


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
        return self._run('instantiate-end', [], params,
                         ['--stack', self._stack_id(vnf_instance, kwargs)],
                         self._package_dir(context, vnf_instance, kwargs))

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
        params = self._additional_params(terminate_vnf_request, info)
        result = self._run('terminate-end', [], params, source,
                           self._package_dir(context, vnf_instance, kwargs))
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
        params = self._additional_params(scale_vnf_request, info)
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
        params = self._additional_params(scale_vnf_request, info)
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
        targets = (self._heal_targets(vnf_instance, ids) if ids
                   else [['--cluster']])
        params = self._additional_params(heal_vnf_request, info)
        source = ['--stack', self._stack_id(vnf_instance, kwargs)]
        pkg = self._package_dir(context, vnf_instance, kwargs)
        if not ids:
            return self._run(operation, targets[0], params, source, pkg)
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
