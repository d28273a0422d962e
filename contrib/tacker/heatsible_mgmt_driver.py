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

What it maps (what heatsible implements today):

  instantiate_end                      -> heatsible run instantiate-end
  heal_start, storage server VNFC      -> heatsible run heal-start --storage-server
  heal_end,   storage server VNFC      -> heatsible run heal-end --storage-server
  heal_end,   whole VNF (no VNFC ids)  -> heatsible run heal-end --cluster

Everything else (instantiate_start, terminate_start/_end, scale_start/_end,
heal of a master or worker VNFC, heal_start of the whole VNF,
change_external_connectivity_*, modify_information_*) is NOT implemented by
heatsible yet: those methods log one line and return, nothing is run.

Assumptions about Tacker that this file makes (not verified against a running
Tacker; no Tacker runs where this was written):

* ``vnf_instance.instantiated_vnf_info.instance_id`` is the Heat stack id of
  the VNF (Tacker's own kubernetes_mgmt.py sample uses it as the stack id).
* The extracted VNF package is at
  ``tacker.vnflcm.utils._get_vnf_package_path(context, vnf_instance.vnfd_id)``
  (a private helper the Tacker samples use). ``HEATSIBLE_PACKAGE_DIR``, or a
  ``package_dir`` keyword argument, overrides it.
* The instantiate request's additionalParams are
  ``instantiate_vnf_request.additional_params`` at instantiate_end, and are
  kept as ``vnf_instance.instantiated_vnf_info.additional_params`` for heal.
* A heal request without ``vnfc_instance_id`` heals the whole VNF; with ids,
  each id is matched against ``instantiated_vnf_info.vnfc_resource_info[].id``
  and the VNFC's ``vdu_id`` tells the storage server (``storage_server`` by
  default, as in Tacker's PV usage guide; ``HEATSIBLE_STORAGE_VDU_IDS``,
  comma-separated, overrides it).

Configuration, from tacker-conductor's environment (or the class attributes):

  HEATSIBLE_BIN           the heatsible executable (default: "heatsible" on PATH)
  HEATSIBLE_KNOWN_HOSTS   known_hosts file for the Ansible host and every node
                          (passed as --known-hosts; default: heatsible's own,
                          ~/.ssh/known_hosts of the conductor's user)
  HEATSIBLE_TIMEOUT       seconds before the run is stopped (default 3600):
                          heatsible gets SIGTERM (it then stops Ansible and
                          removes its staging directory, exit code 130), and
                          SIGKILL only if it has not ended 120 s later
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


class HeatsibleMgmtDriver(_Base):

    # Overridable per deployment (subclass, or the environment).
    heatsible_bin = None
    known_hosts = None
    timeout = None
    storage_vdu_ids = None

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

    def _heal_target(self, vnf_instance, heal_vnf_request):
        """'cluster', 'storage-server' or None (a target heatsible lacks)."""
        ids = _get(heal_vnf_request, 'vnfc_instance_id') or []
        if not ids:
            return 'cluster'
        info = _get(vnf_instance, 'instantiated_vnf_info')
        vnfcs = {_get(v, 'id'): v
                 for v in (_get(info, 'vnfc_resource_info') or [])}
        storage = self._storage_vdus()
        vdus = [_get(vnfcs.get(i), 'vdu_id') for i in ids]
        if vdus and all(v in storage for v in vdus):
            return 'storage-server'
        return None

    # ---- running heatsible ---------------------------------------------

    def _run(self, operation, extra_args, additional_params, stack_id,
             package_dir):
        """Run heatsible; return stdout's JSON document or raise.

        The request goes through a 0600 file in a fresh 0700 directory,
        removed in finally. stdin is /dev/null (heatsible never prompts).
        """
        tmpdir = tempfile.mkdtemp(prefix='heatsible-req-')  # 0700
        req = os.path.join(tmpdir, 'request.json')
        try:
            fd = os.open(req, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'w') as f:
                json.dump(additional_params, f)
            argv = [self._bin(), 'run', operation] + list(extra_args) + [
                '--request', req, '--package', package_dir,
                '--stack', stack_id, '-o', 'json']
            kh = self._known_hosts()
            if kh:
                argv += ['--known-hosts', kh]
            LOG.info('heatsible: running %s', ' '.join(argv))
            try:
                proc = self._call(argv)
            except subprocess.TimeoutExpired:
                _raise('heatsible %s: timed out after %ss and was stopped '
                       '(SIGTERM); see its run record on this host' % (
                           operation, self._timeout()))
            except OSError as e:
                _raise('heatsible %s: cannot run %s: %s' % (
                    operation, argv[0], e))
            return self._result(operation, proc)
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
    def _not_implemented(hook):
        LOG.info('heatsible: %s is not implemented by heatsible yet; '
                 'nothing was run', hook)

    # ---- the hooks ------------------------------------------------------

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant,
                          grant_request, **kwargs):
        self._not_implemented('instantiate_start')

    def instantiate_end(self, context, vnf_instance,
                        instantiate_vnf_request, grant,
                        grant_request, **kwargs):
        params = self._additional_params(
            instantiate_vnf_request,
            _get(vnf_instance, 'instantiated_vnf_info'))
        return self._run('instantiate-end', [], params,
                         self._stack_id(vnf_instance, kwargs),
                         self._package_dir(context, vnf_instance, kwargs))

    def terminate_start(self, context, vnf_instance,
                        terminate_vnf_request, grant,
                        grant_request, **kwargs):
        self._not_implemented('terminate_start')

    def terminate_end(self, context, vnf_instance,
                      terminate_vnf_request, grant,
                      grant_request, **kwargs):
        # Nothing to clean on the Ansible host: heatsible removes its
        # staging directory after every run already.
        self._not_implemented('terminate_end')

    def scale_start(self, context, vnf_instance,
                    scale_vnf_request, grant,
                    grant_request, **kwargs):
        self._not_implemented('scale_start')

    def scale_end(self, context, vnf_instance,
                  scale_vnf_request, grant,
                  grant_request, **kwargs):
        self._not_implemented('scale_end')

    def _heal(self, hook, operation, context, vnf_instance,
              heal_vnf_request, kwargs):
        target = self._heal_target(vnf_instance, heal_vnf_request)
        if target is None:
            self._not_implemented(hook + ' of a master or worker VNFC')
            return None
        if target == 'cluster' and operation == 'heal-start':
            # heatsible has nothing to do before the whole cluster is
            # replaced (it would only matter with kubespray, not driven yet).
            self._not_implemented('heal_start of the whole VNF')
            return None
        params = self._additional_params(
            heal_vnf_request, _get(vnf_instance, 'instantiated_vnf_info'))
        return self._run(operation, ['--' + target], params,
                         self._stack_id(vnf_instance, kwargs),
                         self._package_dir(context, vnf_instance, kwargs))

    def heal_start(self, context, vnf_instance,
                   heal_vnf_request, grant,
                   grant_request, **kwargs):
        # Never add --delete-released here: acknowledging Released PVs is an
        # operator's decision (docs/runbook.md).
        return self._heal('heal_start', 'heal-start', context, vnf_instance,
                          heal_vnf_request, kwargs)

    def heal_end(self, context, vnf_instance,
                 heal_vnf_request, grant,
                 grant_request, **kwargs):
        return self._heal('heal_end', 'heal-end', context, vnf_instance,
                          heal_vnf_request, kwargs)

    def change_external_connectivity_start(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        self._not_implemented('change_external_connectivity_start')

    def change_external_connectivity_end(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        self._not_implemented('change_external_connectivity_end')

    # Newer Tacker releases declare these abstract too.
    def modify_information_start(self, context, vnf_instance,
                                 modify_vnf_request, **kwargs):
        self._not_implemented('modify_information_start')

    def modify_information_end(self, context, vnf_instance,
                               modify_vnf_request, **kwargs):
        self._not_implemented('modify_information_end')
