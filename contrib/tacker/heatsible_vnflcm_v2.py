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

"""heatsible as a VNF LCM script of Tacker's v2 API (/vnflcm/v2, SOL003 v3).

A VNF package carries this file (Scripts/) and names it in its VNFD as the
implementation of the Vnflcm interface's operations. Tacker's v2 conductor
(tacker/sol_refactored/conductor/vnflcm_driver_v2.py,
_exec_mgmt_driver_script) runs it as ``python SCRIPT`` with its own
interpreter and a pickled dict on stdin:

  operation                      e.g. "heal_start"
  request                        the operation's request (to_dict())
  vnf_instance                   the VnfInstanceV2 (to_dict())
  grant_request, grant_response  the grant exchange (or None)
  tmp_csar_dir                   the extracted VNF package (a temporary copy)
  user_script_err_handling_data  a dict kept across one operation's scripts

It reads an optional pickled dict back from stdout ("vnf_instance":
replaces the instance, "user_script_err_handling_data": merged into that
dict) and fails the operation with this script's stderr when it exits
non-zero. This script therefore never writes anything but that pickle to
stdout.

What it does, per operation (docs/tacker-v2.md in the heatsible
repository has the long form, docs/hooks.md heatsible's side):

  instantiate_start   checks only: k8s_cluster_installation_param present,
                      `heatsible validate`, the vimConnectionInfo key free
  instantiate_end     run instantiate-end --vim-info FILE; the Kubernetes
                      VIM appended to vimConnectionInfo
  heal_start/_end     no vnfcInstanceId (SOL003, the whole VNF):
                        heal-start --cluster (the VIM entry dropped) /
                        heal-end --cluster --vim-info (entry added again);
                        with additionalParams.all=true refused at heal_start
                        (Tacker deletes and re-creates the stack and the
                        storage server's volume with it)
                      vnfcInstanceId (SOL002): the storage server first,
                        heal-... --storage-server (heal-start with
                        --delete-released when additionalParams.
                        heatsible_delete_released is JSON true); each
                        master or worker
                        heal-... --node <its member stack id>, one run
                        each; with all=true refused at heal_start when the
                        storage server is a target (its volume would be
                        re-created)
  scale_start         SCALE_IN of workers: scale-start --nodes <the servers
                      Tacker's grant removes>; a master VDU refused; SCALE_OUT:
                      the workers before it recorded for scale_end
  scale_end           SCALE_OUT of workers: scale-end --nodes <new servers>
  scale_rollback_start  the workers Heat added (read through heatsible
                      topology) drained: scale-start --nodes ...
  terminate_start     topology --save (Tacker deletes the stack before
                      terminate_end); never fails the termination
  terminate_end       run terminate-end --topology FILE
  instantiate_rollback_start/_end   as terminate_start/_end
  anything else       nothing (at *_start: the Kubernetes VIM entry is put
                      back last if the database reordered it)

Tacker's v2 API keeps no instantiation parameters for later operations:
heal, scale and terminate requests carry k8s_cluster_installation_param in
their additionalParams, as Tacker's own v2 Kubernetes guide requires
("You must define k8s_cluster_installation_param in the additionalParams
of each request"). A heal or scale without it is refused before anything
changes; a terminate without it only skips heatsible's clean-up.

Only Python's standard library and the heatsible binary: Tacker runs this
with its own interpreter, nothing is imported from Tacker.

Configuration: tacker-conductor's environment (the script inherits it):

  HEATSIBLE_BIN            the executable (default: heatsible on PATH)
  HEATSIBLE_ANSIBLE_HOST   --ansible-host ADDR, or "local" for --local
                           (default: ansible.ip_address, else --local)
  HEATSIBLE_KNOWN_HOSTS    --known-hosts FILE
  HEATSIBLE_WAIT           --wait VALUE: the roles' wait bounds, e.g.
                           "cloud-init=20m,api=300"
  HEATSIBLE_TIMEOUT        seconds per heatsible run (default 3600): SIGTERM,
                           then SIGKILL 120 s later
  HEATSIBLE_REGISTER_VIM   0: no --vim-info, no vimConnectionInfo entry
  HEATSIBLE_STORAGE_VDU_IDS  VDU ids of the storage server for VNFCs without
                           CP info (default storage_server)
  HEATSIBLE_TOPOLOGY_DIR   where terminate_start saves the topology
                           (default $HEATSIBLE_STATE_DIR/tacker-topology)
  HEATSIBLE_STATE_DIR      passed through (heatsible's locks, run records)
  HEATSIBLE_OS_CREDENTIALS "vim" (default): heatsible reads Heat with the
                           VNF's OpenStack VIM from vimConnectionInfo, as
                           Tacker does; "environment": with OS_CLOUD/OS_*
                           of the conductor's environment

Secrets: the request's parameters go to heatsible through a 0600 file in a
private 0700 directory, removed afterwards; the VIM's password through
heatsible's environment (OS_PASSWORD), never its argv. The Kubernetes
bearer token goes to Tacker in the returned vnf_instance only (Tacker keeps
it like the OpenStack VIM's password and leaves it out of its API
answers); nothing here prints a secret.
"""

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile

# heatsible's exit codes (docs/hooks.md; they never change meaning).
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
    EXIT_INVALID: "invalid input, nothing was touched",
    EXIT_UNREACHABLE: "a host could not be reached or authenticated, "
                      "or its host key is unknown or changed",
    EXIT_TASK_FAILED: "a task failed on at least one host",
    EXIT_OPENSTACK: "OpenStack/Heat could not be read",
    EXIT_REFUSED: "refused for safety, nothing was changed",
    EXIT_INTERRUPTED: "interrupted",
}

OPENSTACK_VIM_TYPES = ('ETSINFV.OPENSTACK_KEYSTONE.V_3', 'openstack')
K8S_VIM_TYPE = 'ETSINFV.KUBERNETES.V_1'
# extra key marking the vimConnectionInfo entry this script added
VIM_MARK = 'heatsible'
# user_script_err_handling_data keys (non-secret: Tacker shows them in the
# operation's error)
HEAL_RECORD = 'heatsible_heal'
SCALE_RECORD = 'heatsible_scale_out_before'

# What OpenStack credentials heatsible must not mix with the VIM's.
OS_CREDENTIAL_VARS = (
    'OS_CLOUD', 'OS_CLIENT_CONFIG_FILE', 'OS_AUTH_URL', 'OS_AUTH_TYPE',
    'OS_USERNAME', 'OS_USER_ID', 'OS_USERID', 'OS_PASSWORD', 'OS_TOKEN',
    'OS_PROJECT_NAME', 'OS_PROJECT_ID', 'OS_TENANT_NAME', 'OS_TENANT_ID',
    'OS_USER_DOMAIN_NAME', 'OS_USER_DOMAIN_ID', 'OS_PROJECT_DOMAIN_NAME',
    'OS_PROJECT_DOMAIN_ID', 'OS_DOMAIN_NAME', 'OS_DOMAIN_ID',
    'OS_SYSTEM_SCOPE', 'OS_REGION_NAME', 'OS_INTERFACE',
    'OS_APPLICATION_CREDENTIAL_ID', 'OS_APPLICATION_CREDENTIAL_NAME',
    'OS_APPLICATION_CREDENTIAL_SECRET')


class Failure(Exception):
    """The operation fails with this message (Tacker shows it)."""

    def __init__(self, message, exit_code=EXIT_INTERNAL):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


# _last_json_object, _unique and the heatsible call below do what the v1
# shim's (heatsible_mgmt_driver.py) do, written again on purpose: this file is
# a VNF package artifact that Tacker runs alone with its own interpreter, where
# the shim's distribution is not installed. A fix to one belongs in both.
def _last_json_object(text):
    """The last top-level JSON object in text, or {}."""
    decoder = json.JSONDecoder()
    found = {}
    i = text.find('{')
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find('{', i + 1)
            continue
        if isinstance(obj, dict):
            found = obj
        i = text.find('{', end)
    return found


def _unique(items):
    out = []
    for i in items:
        if i and i not in out:
            out.append(i)
    return out


def _stack_uuid(ref):
    """A Heat stack id from Tacker's "name/id" form (or an id as it is)."""
    return (ref or '').rsplit('/', 1)[-1]


def mysql_order(key):
    """How a MySQL JSON column orders an object's keys: shorter first.

    MariaDB, PostgreSQL and SQLite keep the order a document was written
    in; MySQL sorts the keys (by length, then bytes). Tacker takes the first
    vimConnectionInfo entry as the VNF's VIM (select_vim_info), so the
    Kubernetes entry must come last in both orders.
    """
    return (len(key.encode('utf-8')), key.encode('utf-8'))


class Script(object):

    def __init__(self, data, environ=None):
        self.env = dict(os.environ if environ is None else environ)
        self.data = data
        self.operation = data.get('operation') or ''
        self.req = data.get('request') or {}
        self.inst = data.get('vnf_instance') or {}
        self.grant_req = data.get('grant_request') or {}
        self.csar_dir = data.get('tmp_csar_dir')
        self.err_data = dict(data.get('user_script_err_handling_data') or {})
        self.err_data_changed = False
        self.inst_changed = False

    # ---- configuration -------------------------------------------------

    def _bin(self):
        return self.env.get('HEATSIBLE_BIN') or 'heatsible'

    def _timeout(self):
        raw = self.env.get('HEATSIBLE_TIMEOUT') or '3600'
        try:
            return float(raw)
        except ValueError:
            raise Failure('HEATSIBLE_TIMEOUT="%s" is not a number of seconds'
                          % raw, EXIT_INVALID)

    def _vim_enabled(self):
        return self.env.get('HEATSIBLE_REGISTER_VIM', '1') not in (
            '0', 'false', 'no', '')

    def _storage_vdus(self):
        raw = self.env.get('HEATSIBLE_STORAGE_VDU_IDS', 'storage_server')
        return {v.strip() for v in raw.split(',') if v.strip()}

    def _state_dir(self):
        if self.env.get('HEATSIBLE_STATE_DIR'):
            return self.env['HEATSIBLE_STATE_DIR']
        if hasattr(os, 'geteuid') and os.geteuid() == 0:
            return '/var/lib/heatsible'
        return os.path.join(self.env.get('HOME') or os.path.expanduser('~'),
                            '.local', 'state', 'heatsible')

    def _topology_file(self):
        d = self.env.get('HEATSIBLE_TOPOLOGY_DIR') or os.path.join(
            self._state_dir(), 'tacker-topology')
        vnf_id = str(self.inst.get('id') or '')
        safe = ''.join(c for c in vnf_id if c.isalnum() or c in '-_.')
        if not safe or safe != vnf_id or safe in ('.', '..'):
            raise Failure('the VNF instance id "%s" cannot name a file'
                          % vnf_id, EXIT_INVALID)
        return os.path.join(d, safe + '.topology.yaml')

    # ---- what Tacker gives ----------------------------------------------

    def _info(self):
        return self.inst.get('instantiatedVnfInfo') or {}

    def _vnfcs(self):
        return list(self._info().get('vnfcResourceInfo') or [])

    def _additional_params(self):
        return self.req.get('additionalParams') or {}

    def _k8s(self, required=True):
        """k8s_cluster_installation_param of the request, or None."""
        k8s = self._additional_params().get('k8s_cluster_installation_param')
        if isinstance(k8s, dict) and k8s:
            return k8s
        if not required:
            return None
        raise Failure(
            'heatsible %s: request.additionalParams.'
            'k8s_cluster_installation_param is missing: the v2 API of '
            'Tacker keeps no instantiation parameters, so each heal, scale '
            'and terminate request carries the ones the VNF was instantiated '
            'with (e.g. --additional-param-file FILE with '
            '{"k8s_cluster_installation_param": {...}}). Refused, nothing '
            'was run or changed' % self.operation, EXIT_INVALID)

    def _stack(self):
        stack = (self._info().get('metadata') or {}).get('stack_id')
        if not stack and self.operation.startswith('instantiate_rollback') \
                and self.inst.get('id'):
            # the instance was not saved with the stack id: Tacker's own
            # name for the stack (heat_utils.get_stack_name)
            return 'vnf-%s' % self.inst['id']
        if not stack:
            raise Failure(
                'heatsible %s: vnf_instance.instantiatedVnfInfo.metadata.'
                'stack_id is empty: no Heat stack to read (is the VNF '
                'instantiated on an OpenStack VIM?)' % self.operation,
                EXIT_INVALID)
        return _stack_uuid(stack)

    def _package(self):
        if not self.csar_dir or not os.path.isdir(self.csar_dir):
            raise Failure('heatsible %s: tmp_csar_dir "%s" is not a directory'
                          % (self.operation, self.csar_dir), EXIT_INTERNAL)
        return self.csar_dir

    def _vim_name(self, k8s):
        return k8s.get('vim_name') or (
            'kubernetes_vim_%s' % self.inst.get('id'))

    def _where(self, k8s):
        host = self.env.get('HEATSIBLE_ANSIBLE_HOST')
        if host == 'local':
            return ['--local']
        if host:
            return ['--ansible-host', host]
        ansible = k8s.get('ansible')
        if isinstance(ansible, dict) and ansible.get('ip_address'):
            return []
        return ['--local']

    def _openstack_vim(self):
        """(key, entry) of the VNF's OpenStack VIM, or (None, None)."""
        conns = self.inst.get('vimConnectionInfo') or {}
        for key, entry in conns.items():
            if (entry or {}).get('vimType') in OPENSTACK_VIM_TYPES:
                return key, entry
        return None, None

    def _heatsible_env(self, heat=True):
        """heatsible's environment: OpenStack credentials from the VIM.

        As Tacker reads Heat (heat_utils.HeatClient(vim_info)): the VNF's
        OpenStack VIM of vimConnectionInfo. OS_CACERT and OS_INSECURE of
        the conductor's environment stay (TLS is the conductor's setting,
        as Tacker's heat_verify_cert/heat_ca_cert_file). heat=False: a run
        that reads no Heat (--topology) gets no credentials at all; Tacker
        has emptied vimConnectionInfo before terminate_end.
        """
        env = dict(self.env)
        mode = env.get('HEATSIBLE_OS_CREDENTIALS', 'vim')
        if mode == 'environment':
            return env
        if mode != 'vim':
            raise Failure('HEATSIBLE_OS_CREDENTIALS="%s" is neither "vim" nor '
                          '"environment"' % mode, EXIT_INVALID)
        if not heat:
            for k in OS_CREDENTIAL_VARS:
                env.pop(k, None)
            return env
        key, vim = self._openstack_vim()
        access = (vim or {}).get('accessInfo') or {}
        endpoint = ((vim or {}).get('interfaceInfo') or {}).get('endpoint')
        if not (endpoint and access.get('username') and
                access.get('password')):
            raise Failure(
                'heatsible %s: vimConnectionInfo has no OpenStack VIM with '
                'interfaceInfo.endpoint, accessInfo.username and '
                'accessInfo.password to read the Heat stack with; set '
                'HEATSIBLE_OS_CREDENTIALS=environment (and OS_CLOUD) in '
                'the environment of tacker-conductor to use its own' %
                self.operation, EXIT_OPENSTACK)
        for k in OS_CREDENTIAL_VARS:
            env.pop(k, None)
        env['OS_AUTH_URL'] = endpoint
        env['OS_USERNAME'] = access['username']
        env['OS_PASSWORD'] = access['password']
        for var, field in (('OS_PROJECT_NAME', 'project'),
                           ('OS_PROJECT_ID', 'projectId'),
                           ('OS_USER_DOMAIN_NAME', 'userDomain'),
                           ('OS_PROJECT_DOMAIN_NAME', 'projectDomain'),
                           ('OS_REGION_NAME', 'region')):
            if access.get(field):
                env[var] = access[field]
        return env

    # ---- the VNFCs -----------------------------------------------------

    @staticmethod
    def _cpds(vnfc):
        return {cp.get('cpdId') for cp in (vnfc.get('vnfcCpInfo') or [])}

    def _is_storage_server(self, vnfc, k8s):
        """As Tacker's kubernetes_mgmt.py tells it: by the VNFC's CPs.

        The VNFC one of whose vnfcCpInfo[].cpdId is storage_server's
        nic_cp_name (heatsible's default: its ssh_cp_name); a VNFC without
        CP info by its vduId (HEATSIBLE_STORAGE_VDU_IDS).
        """
        storage = k8s.get('storage_server') or {}
        if not isinstance(storage, dict) or not storage:
            return False
        cp = storage.get('nic_cp_name') or storage.get('ssh_cp_name')
        cps = self._cpds(vnfc)
        if cp and cps:
            return cp in cps
        return vnfc.get('vduId') in self._storage_vdus()

    def _vdus_of(self, role, k8s):
        """The VDU ids whose VNFCs carry one of role_node's CPs."""
        node = k8s.get(role + '_node') or {}
        if not isinstance(node, dict):
            return set()
        cps = {node.get('nic_cp_name'), node.get('ssh_cp_name')} - {None}
        return {v.get('vduId') for v in self._vnfcs()
                if cps & self._cpds(v)}

    def _volume_ids(self, k8s):
        storage = k8s.get('storage_server') or {}
        return [p.get('volume_resource_id')
                for p in (storage.get('cinder_volume_setup_params') or [])
                if isinstance(p, dict) and p.get('volume_resource_id')]

    # ---- running heatsible ---------------------------------------------

    def _heatsible(self, label, argv_tail, k8s, vim_info=False):
        """Run heatsible; stdout's JSON document, or raise Failure.

        The request (k8s_cluster_installation_param only) goes through a
        0600 file in a fresh 0700 directory, removed in finally; so does
        the --vim-info file.
        """
        tmpdir = tempfile.mkdtemp(prefix='heatsible-v2-')
        req = os.path.join(tmpdir, 'request.json')
        vim_path = os.path.join(tmpdir, 'vim.json')
        try:
            fd = os.open(req, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, 'w') as f:
                json.dump({'k8s_cluster_installation_param': k8s}, f)
            argv = [self._bin()] + argv_tail(req)
            if vim_info:
                argv += ['--vim-info', vim_path]
            proc = self._call(label, argv, heat='--topology' not in argv)
            result = self._result(label, proc)
            if vim_info:
                result['vim'] = self._read_vim_info(label, vim_path, result)
            return result
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def _run(self, operation, target, k8s, source=None, note='',
             vim_info=False):
        """heatsible run OPERATION TARGET ... -o json."""
        if source is None:
            source = ['--stack', self._stack()]
        pkg = self._package()
        where = self._where(k8s)

        kh = self.env.get('HEATSIBLE_KNOWN_HOSTS')
        known_hosts = ['--known-hosts', kh] if kh else []
        wait = self.env.get('HEATSIBLE_WAIT')
        if wait:
            known_hosts += ['--wait', wait]

        def tail(req):
            return (['run', operation] + list(target) +
                    ['--request', req, '--package', pkg] + list(source) +
                    where + ['-o', 'json'] + known_hosts)
        label = ' '.join([operation] + list(target)) + (
            ' ' + note if note else '')
        return self._heatsible(label, tail, k8s, vim_info)

    def _call(self, label, argv, heat=True):
        """The run, stopped gently (SIGTERM, then SIGKILL) on timeout."""
        env = self._heatsible_env(heat)
        try:
            p = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, universal_newlines=True,
                env=env)
        except OSError as e:
            raise Failure('heatsible %s: cannot run %s: %s' % (
                label, argv[0], e.strerror or e), EXIT_INTERNAL)
        try:
            out, err = p.communicate(timeout=self._timeout())
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGTERM)
            try:
                p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
            raise Failure('heatsible %s: timed out after %ss and was stopped '
                          '(SIGTERM); see its run record on the conductor '
                          'host' % (label, self._timeout()),
                          EXIT_INTERRUPTED)
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    @staticmethod
    def _result(label, proc):
        result = _last_json_object(proc.stdout or '')
        error = _last_json_object(proc.stderr or '')
        code = proc.returncode
        if code == EXIT_OK:
            return result
        if code < 0:
            code_text = 'killed by signal %d' % -code
            code = EXIT_INTERRUPTED
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
        raise Failure('heatsible %s failed (%s): %s' % (label, code_text,
                                                        msg), code)

    @staticmethod
    def _read_vim_info(label, path, result):
        """The --vim-info file's object (mode 0600 checked)."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise Failure(
                'heatsible %s succeeded but wrote no --vim-info file: the '
                'Kubernetes VIM cannot be added to vimConnectionInfo' %
                label, EXIT_INTERNAL)
        if st.st_mode & 0o077:
            raise Failure(
                'heatsible %s: its --vim-info file has mode %o, not 0600: '
                'refusing a bearer token others could read' %
                (label, st.st_mode & 0o777), EXIT_INTERNAL)
        with open(path) as f:
            try:
                vim = json.load(f)
            except ValueError as e:
                raise Failure('heatsible %s: its --vim-info file is not '
                              'JSON: %s' % (label, e), EXIT_INTERNAL)
        if not isinstance(vim, dict):
            raise Failure('heatsible %s: its --vim-info file holds no JSON '
                          'object' % label, EXIT_INTERNAL)
        return vim

    # ---- the Kubernetes VIM in vimConnectionInfo -------------------------

    def _vim_key(self, k8s):
        return self._vim_name(k8s)

    @staticmethod
    def _ours(entry):
        return isinstance((entry or {}).get('extra'), dict) and \
            VIM_MARK in entry['extra']

    def _check_vim_key(self, k8s):
        """Refuse a vimConnectionInfo where our entry could come first.

        Tacker takes the first entry as the VNF's VIM for every later
        operation and for its periodic Kubernetes DB sync: the entry this
        script adds must come after every other one, also in a MySQL JSON
        column (keys sorted by length, then bytes).
        """
        if not self._vim_enabled():
            return
        key = self._vim_key(k8s)
        conns = self.inst.get('vimConnectionInfo') or {}
        for k, entry in conns.items():
            if k == key:
                if self._ours(entry):
                    continue
                raise Failure(
                    'heatsible %s: vimConnectionInfo already has an entry '
                    '"%s" that heatsible did not add; the Kubernetes VIM is '
                    'added under the vim_name. Give k8s_cluster_installation'
                    '_param.vim_name another name. Refused, nothing was '
                    'run or changed' % (self.operation, key), EXIT_INVALID)
            if mysql_order(k) >= mysql_order(key):
                raise Failure(
                    'heatsible %s: the Kubernetes VIM would be added to '
                    'vimConnectionInfo as "%s", and a MySQL JSON column '
                    'sorts it before the entry "%s" (shorter keys first), '
                    'where Tacker would take the Kubernetes cluster as the '
                    'VIM of the VNF. Give the OpenStack entry a shorter key '
                    '(e.g. "vim1") or k8s_cluster_installation_param.'
                    'vim_name a longer name, or set HEATSIBLE_REGISTER_VIM=0'
                    '. Refused, nothing was run or changed'
                    % (self.operation, key, k), EXIT_INVALID)

    def _add_vim(self, k8s, vim):
        server = vim.get('server')
        token = vim.get('bearer_token')
        ca = vim.get('ca_cert') or ''
        if not isinstance(server, str) or not server.startswith('https://') \
                or any(c.isspace() for c in server):
            raise Failure('heatsible %s: its "vim" object has no https:// '
                          'server' % self.operation, EXIT_INTERNAL)
        if not isinstance(token, str) or not token or \
                any(c.isspace() for c in token):
            raise Failure('heatsible %s: its "vim" object has no usable '
                          'bearer_token' % self.operation, EXIT_INTERNAL)
        if not isinstance(ca, str) or (
                ca and '-----BEGIN CERTIFICATE-----' not in ca):
            raise Failure('heatsible %s: its "vim" object has a ca_cert that '
                          'is not a PEM certificate' % self.operation,
                          EXIT_INTERNAL)
        key = self._vim_key(k8s)
        interface = {'endpoint': server}
        if ca:
            interface['ssl_ca_cert'] = ca
        sa = vim.get('service_account') or {}
        entry = {
            'vimType': K8S_VIM_TYPE,
            'interfaceInfo': interface,
            'accessInfo': {'bearer_token': token},
            'extra': {VIM_MARK: {
                'vim_name': self._vim_name(k8s),
                'cluster': vim.get('cluster'),
                'service_account': '%s/%s' % (sa.get('namespace'),
                                              sa.get('name')),
                'token_secret': '%s/%s-token' % (sa.get('namespace'),
                                                 sa.get('name')),
            }},
        }
        conns = dict(self.inst.get('vimConnectionInfo') or {})
        conns = {k: v for k, v in conns.items()
                 if not self._ours(v) and k != key}
        conns[key] = entry
        self.inst['vimConnectionInfo'] = conns
        self.inst_changed = True

    def _drop_vim(self):
        conns = self.inst.get('vimConnectionInfo') or {}
        kept = {k: v for k, v in conns.items() if not self._ours(v)}
        if len(kept) != len(conns):
            self.inst['vimConnectionInfo'] = kept
            self.inst_changed = True

    def _vim_last(self):
        """Put this script's entry back last if it is not (a DB reordered)."""
        conns = self.inst.get('vimConnectionInfo') or {}
        keys = list(conns)
        ours = [k for k in keys if self._ours(conns[k])]
        if not ours or keys[-len(ours):] == ours:
            return
        reordered = {k: conns[k] for k in keys if k not in ours}
        for k in ours:
            reordered[k] = conns[k]
        self.inst['vimConnectionInfo'] = reordered
        self.inst_changed = True

    def _run_with_vim(self, operation, target, k8s):
        if not self._vim_enabled():
            return self._run(operation, target, k8s)
        self._check_vim_key(k8s)
        result = self._run(operation, target, k8s, vim_info=True)
        self._add_vim(k8s, result['vim'])
        return result

    # ---- the operations ------------------------------------------------

    def instantiate_start(self):
        k8s = self._k8s()
        self._check_vim_key(k8s)
        pkg = self._package()
        self._heatsible('validate', lambda req: [
            'validate', '--request', req, '--package', pkg, '-o', 'json'],
            k8s)

    def instantiate_end(self):
        self._run_with_vim('instantiate-end', [], self._k8s())

    def _heal_vnfcs(self, ids):
        """The vnfcResourceInfo entries of the request's vnfcInstanceId.

        vnfcInstanceId names VnfcInfo ids (SOL002); each points at its
        vnfcResourceInfo (vnfcResourceInfoId).
        """
        info = self._info()
        by_res = {v.get('id'): v for v in self._vnfcs()}
        by_info = {c.get('id'): c for c in (info.get('vnfcInfo') or [])}
        out = []
        for i in _unique(ids):
            vnfc = None
            if i in by_info:
                vnfc = by_res.get(by_info[i].get('vnfcResourceInfoId'))
            elif i in by_res:
                vnfc = by_res[i]
            if vnfc is None:
                raise Failure(
                    'heatsible %s: VNFC %s is not in the VNF '
                    '(instantiatedVnfInfo.vnfcInfo); nothing was run' %
                    (self.operation, i), EXIT_INVALID)
            out.append((i, vnfc))
        return out

    def _refuse_whole_vnf_recreate(self, k8s):
        vols = self._volume_ids(k8s)
        if not vols:
            return
        raise Failure(
            'heatsible heal_start: a heal of the whole VNF with '
            'additionalParams.all=true makes Tacker delete the Heat stack '
            'and create it again, and with it the Cinder volume of the '
            'storage server, %s: the data of the PersistentVolumes would be '
            'lost. '
            'Refused, nothing was run or changed. Heal without "all" (or '
            '"all": false): Tacker then replaces every VM and keeps the '
            'volume, and heatsible sets the cluster up again on it' %
            ', '.join(vols), EXIT_REFUSED)

    def _refuse_storage_recreate(self, vnfc, k8s):
        """Refuse a heal that re-creates the storage server's volume.

        Tacker's v2 heal of VNFCs re-creates a VNFC's storage (its
        storageResourceIds) when additionalParams.all is true
        (_make_SOL002_heal_grant_request): the grant request's STORAGE
        removeResources. Either one of the storage server's is enough.
        """
        info = self._info()
        storages = {s.get('id'): s
                    for s in info.get('virtualStorageResourceInfo') or []}
        mine = {}
        for sid in vnfc.get('storageResourceIds') or []:
            s = storages.get(sid) or {}
            rid = (s.get('storageResource') or {}).get('resourceId') or sid
            mine[rid] = s.get('virtualStorageDescId') or '?'
        vols = set(self._volume_ids(k8s))
        doomed = dict(mine)
        for r in self.grant_req.get('removeResources') or []:
            rid = (r.get('resource') or {}).get('resourceId')
            if r.get('type') == 'STORAGE' and (
                    rid in mine or r.get('resourceTemplateId') in vols):
                doomed[rid] = r.get('resourceTemplateId') or '?'
        if not doomed:
            return
        raise Failure(
            'heatsible heal_start: this heal of the storage server (VNFC '
            '%s) has additionalParams.all=true, so Tacker would delete and '
            're-create its volume %s: the data of the PersistentVolumes would '
            'be lost. Refused, nothing was run or changed. Heal it without '
            '"all" (or with "all": false): Tacker then replaces the VM and '
            'keeps the volume' % (vnfc.get('id'), ', '.join(
                '%s (%s)' % (name, rid)
                for rid, name in sorted(doomed.items(), key=str))),
            EXIT_REFUSED)

    def _node_ref(self, vnfc):
        """How heatsible names a master's or worker's node: its member
        nested stack id (stable across a heal, which replaces the server
        inside it), else its server id."""
        md = vnfc.get('metadata') or {}
        if md.get('parent_stack_id') and md.get('stack_id'):
            return _stack_uuid(md['stack_id'])
        return (vnfc.get('computeResource') or {}).get('resourceId')

    def heal_start(self):
        k8s = self._k8s()
        ids = self.req.get('vnfcInstanceId')
        # Python truth, as Tacker tests it (heal_grant, Openstack.heal):
        # the JSON string "false" re-creates the volume too
        all_ = bool(self._additional_params().get('all', False))
        if not ids:
            if all_:
                self._refuse_whole_vnf_recreate(k8s)
            self._run('heal-start', ['--cluster'], k8s)
            if self._vim_enabled():
                self._drop_vim()
            return
        targets = self._heal_vnfcs(ids)
        storage = None
        nodes = []
        for vid, vnfc in targets:
            if self._is_storage_server(vnfc, k8s):
                storage = storage or vnfc
                continue
            ref = self._node_ref(vnfc)
            if not ref:
                raise Failure(
                    'heatsible heal_start: VNFC %s (VDU %s) has no '
                    'computeResource.resourceId; nothing was run' %
                    (vid, vnfc.get('vduId')), EXIT_INVALID)
            nodes.append({'vnfcInstanceId': vid, 'vduId': vnfc.get('vduId'),
                          'node': ref})
        if storage is not None and all_:
            self._refuse_storage_recreate(storage, k8s)
        release = self._delete_released() if storage is not None else False
        seen = set()
        nodes = [n for n in nodes
                 if not (n['node'] in seen or seen.add(n['node']))]
        self.err_data[HEAL_RECORD] = {'storage_server': storage is not None,
                                      'nodes': nodes}
        self.err_data_changed = True
        self._heal_runs('heal-start', storage is not None, nodes, k8s,
                        release)

    def _delete_released(self):
        """additionalParams.heatsible_delete_released (as the v1 shim).

        JSON true: the operator acknowledges the Released PVs (Retain PVs
        whose claim was deleted), which heal-start of the storage server
        then unregisters too (--delete-released; their data stays on the
        export). Anything but a JSON boolean is refused.
        """
        ap = self._additional_params()
        if 'heatsible_delete_released' not in ap:
            return False
        v = ap['heatsible_delete_released']
        if not isinstance(v, bool):
            raise Failure(
                'heatsible heal_start: additionalParams.heatsible_delete_'
                'released is %s: want a JSON boolean (true acknowledges the '
                'Released PVs, which heal_start of the storage server then '
                'unregisters); nothing was run' % json.dumps(v),
                EXIT_INVALID)
        return v

    def _heal_runs(self, operation, storage, nodes, k8s, release=False):
        """The storage server first (a Bound PV stops the heal before any
        node is drained), then one run per node; the first failure stops."""
        storage_target = ['--storage-server'] + (
            ['--delete-released'] if release else [])
        targets = ([storage_target] if storage else []) + [
            ['--node', n['node']] for n in nodes]
        for n, target in enumerate(targets, 1):
            note = ''
            if len(targets) > 1:
                note = '(run %d of %d; done: %s)' % (
                    n, len(targets),
                    ', '.join(' '.join(t) for t in targets[:n - 1])
                    or 'none')
            self._run(operation, target, k8s, note=note)

    def heal_end(self):
        k8s = self._k8s()
        if not self.req.get('vnfcInstanceId'):
            self._run_with_vim('heal-end', ['--cluster'], k8s)
            return
        rec = self.err_data.get(HEAL_RECORD)
        if not isinstance(rec, dict):
            raise Failure(
                'heatsible heal_end: heal_start left no record of the VNFCs '
                'it prepared (user_script_err_handling_data.%s): declare '
                'heal_start beside heal_end in the Vnflcm interface of the '
                'VNFD' % HEAL_RECORD, EXIT_INVALID)
        self._heal_runs('heal-end', bool(rec.get('storage_server')),
                        list(rec.get('nodes') or []), k8s)

    def _scale_vdus(self, resources, k8s):
        """(worker servers/templates, master templates) of COMPUTE res."""
        masters = self._vdus_of('master', k8s)
        workers = self._vdus_of('worker', k8s)
        master_hit, worker_res, other = [], [], []
        for r in resources:
            if r.get('type') != 'COMPUTE':
                continue
            vdu = r.get('resourceTemplateId')
            if vdu in masters:
                master_hit.append(vdu)
            elif vdu in workers:
                worker_res.append(r)
            else:
                other.append(vdu)
        if not masters and not workers:
            # no VNFC carries the requests' CPs: tell by aspect, as the
            # v1 shim does
            aspect = self.req.get('aspectId')
            if aspect and aspect == (k8s.get('master_node') or {}).get(
                    'aspect_id'):
                master_hit = [aspect]
            elif aspect and aspect == (k8s.get('worker_node') or {}).get(
                    'aspect_id'):
                worker_res = [r for r in resources
                              if r.get('type') == 'COMPUTE']
        if master_hit:
            raise Failure(
                'heatsible %s: aspect %s scales master VDU %s; heatsible '
                'scales workers only (kubespray adds control-plane nodes '
                'with cluster.yml and etcd needs an odd number of '
                'members): refused, nothing was run or changed' % (
                    self.operation, self.req.get('aspectId'),
                    ', '.join(_unique(master_hit))), EXIT_INVALID)
        return worker_res

    def scale_start(self):
        kind = self.req.get('type')
        k8s = self._k8s()
        if kind == 'SCALE_OUT':
            # nothing to drain; refuse a master aspect before Heat adds VMs,
            # and remember the workers before, for scale_end
            self._scale_vdus(self.grant_req.get('addResources') or [], k8s)
            self.err_data[SCALE_RECORD] = [
                (v.get('computeResource') or {}).get('resourceId')
                for v in self._vnfcs()]
            self.err_data_changed = True
            return
        if kind != 'SCALE_IN':
            raise Failure('heatsible scale_start: request.type "%s" is '
                          'neither SCALE_IN nor SCALE_OUT' % (kind,),
                          EXIT_INVALID)
        removed = self._scale_vdus(
            self.grant_req.get('removeResources') or [], k8s)
        if not removed:
            return
        victims = _unique([(r.get('resource') or {}).get('resourceId')
                           for r in removed])
        if len(victims) != len(removed):
            raise Failure(
                'heatsible scale_start: the grant of Tacker names %d workers '
                'to remove but only %d server ids: nothing was run, and Heat '
                'must not remove workers heatsible did not drain' % (
                    len(removed), len(victims)), EXIT_INVALID)
        self._run('scale-start', ['--nodes', ','.join(victims)], k8s)

    def scale_end(self):
        kind = self.req.get('type')
        if kind == 'SCALE_IN':
            return
        if kind != 'SCALE_OUT':
            raise Failure('heatsible scale_end: request.type "%s" is neither '
                          'SCALE_IN nor SCALE_OUT' % (kind,), EXIT_INVALID)
        k8s = self._k8s()
        added = self._scale_vdus(self.grant_req.get('addResources') or [],
                                 k8s)
        if not added:
            return
        new = self._new_workers(added)
        if not new:
            raise Failure(
                'heatsible scale_end: Tacker added %d workers, but none is '
                'in instantiatedVnfInfo.vnfcResourceInfo as new: nothing was '
                'run' % len(added), EXIT_INTERNAL)
        self._run('scale-end', ['--nodes', ','.join(new)], k8s)

    def _new_workers(self, added):
        """The new workers' server ids.

        The servers that were not there at scale_start (its record);
        without one, Tacker's own rule: vnfcResourceInfo is sorted newest
        first, and the first N of each VDU are the N it added (Tacker's
        v2 Kubernetes sample takes them so).
        """
        vdus = {}
        for r in added:
            vdus[r.get('resourceTemplateId')] = vdus.get(
                r.get('resourceTemplateId'), 0) + 1
        before = self.err_data.get(SCALE_RECORD)
        new = []
        for vdu, count in vdus.items():
            of_vdu = [v for v in self._vnfcs() if v.get('vduId') == vdu]
            if isinstance(before, list):
                picked = [v for v in of_vdu if (v.get('computeResource') or
                          {}).get('resourceId') not in before]
            else:
                picked = of_vdu[:count]
            new += [(v.get('computeResource') or {}).get('resourceId')
                    for v in picked]
        return _unique(new)

    def scale_rollback_start(self):
        # Tacker rolls back a scale-out only: Heat is about to remove the
        # workers it added, which may have joined the cluster already.
        if self.req.get('type') != 'SCALE_OUT':
            return
        k8s = self._k8s()
        if not self._scale_vdus(self.grant_req.get('addResources') or [],
                                k8s):
            return
        topo = self._topology(k8s)
        known = {(v.get('computeResource') or {}).get('resourceId')
                 for v in self._vnfcs()}
        new = [n.get('server_id') for n in topo.get('nodes') or []
               if n.get('role') == 'worker' and n.get('server_id') and
               n.get('server_id') not in known]
        if not new:
            return
        self._run('scale-start', ['--nodes', ','.join(new)], k8s,
                  note='(rollback of a scale-out)')

    def _topology(self, k8s, save=None):
        stack = self._stack()

        def tail(req):
            argv = ['topology', '--request', req, '--stack', stack]
            if save:
                argv += ['--save', save]
            return argv + ['-o', 'json']
        return self._heatsible('topology', tail, k8s)

    def terminate_start(self):
        # Tacker deletes the stack before terminate_end: save the cluster
        # now. Never fails the termination (heatsible only cleans up).
        k8s = self._k8s(required=False)
        if k8s is None:
            self.note('terminate_start: no k8s_cluster_installation_param '
                      'in the request: the state of heatsible (staging '
                      'directories on the Ansible host, the kubespray '
                      'inventory it wrote, the cluster lock files) is not '
                      'cleaned up')
            return
        try:
            path = self._topology_file()
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            if os.path.exists(path):
                os.remove(path)  # never let terminate_end use a stale one
            self._topology(k8s, save=path)
        except Failure as e:
            self.note('terminate_start: the topology was not saved, so '
                      'terminate_end will not run terminate-end: %s'
                      % e.message)

    def terminate_end(self):
        k8s = self._k8s(required=False)
        path = self._topology_file()
        if k8s is None or not os.path.exists(path):
            self.note('%s: no topology saved (%s) or no '
                      'k8s_cluster_installation_param: terminate-end was '
                      'not run' % (self.operation, path))
            return
        self._run('terminate-end', [], k8s, source=['--topology', path])
        os.remove(path)

    instantiate_rollback_start = terminate_start
    instantiate_rollback_end = terminate_end

    # ---- plumbing ------------------------------------------------------

    notes = None

    def note(self, text):
        """A line for stderr (Tacker logs it only when the script fails)."""
        self.notes = (self.notes or []) + ['heatsible: ' + text]

    HANDLED = ('instantiate_start', 'instantiate_end', 'heal_start',
               'heal_end', 'scale_start', 'scale_end', 'scale_rollback_start',
               'terminate_start', 'terminate_end',
               'instantiate_rollback_start', 'instantiate_rollback_end')

    def run(self):
        """Do the operation; the dict to pickle to stdout, or None."""
        if self.operation.endswith('_start') and \
                self.operation != 'instantiate_start':
            # before Tacker acts: its first entry must be the OpenStack VIM
            self._vim_last()
        if self.operation in self.HANDLED:
            getattr(self, self.operation)()
        else:
            self.note('%s: nothing to do' % (self.operation or '?'))
        return self.output()

    def output(self):
        out = {}
        if self.inst_changed:
            out['vnf_instance'] = self.inst
        if self.err_data_changed:
            out['user_script_err_handling_data'] = self.err_data
        return out or None


def one_line(text):
    """text as Tacker shows it best: one line, ASCII.

    Tacker puts the script's stderr into the operation's error as
    "{operation} failed: {stderr}" with stderr as bytes, so it reads
    b'...' with every newline as \\n and every other byte escaped.
    """
    text = ' '.join(text.split())
    return text.encode('ascii', 'backslashreplace').decode('ascii')


def main(stdin=None, stdout=None, stderr=None, environ=None):
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    stderr = stderr or sys.stderr
    try:
        data = pickle.load(stdin)
    except Exception as e:
        stderr.write('heatsible: cannot read the pickled dict of Tacker '
                     'on stdin: %s' % e.__class__.__name__)
        return EXIT_INTERNAL
    if not isinstance(data, dict):
        stderr.write('heatsible: the stdin of Tacker is not a dict')
        return EXIT_INTERNAL
    script = Script(data, environ)
    try:
        out = script.run()
        code = EXIT_OK
        message = None
    except Failure as e:
        # the record goes back also on failure (Tacker keeps it for a
        # retry or rollback)
        out = ({'user_script_err_handling_data': script.err_data}
               if script.err_data_changed else None)
        code = e.exit_code or EXIT_INTERNAL
        message = e.message
    if out is not None:
        stdout.write(pickle.dumps(out))
        stdout.flush()
    lines = list(script.notes or []) + ([message] if message else [])
    if lines:
        stderr.write(one_line('; '.join(lines)))
    stderr.flush()
    return code


if __name__ == '__main__':
    sys.exit(main())
