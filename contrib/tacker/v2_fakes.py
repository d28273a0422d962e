"""Stand-ins for the v2 script's tests: a fake heatsible and a Heat model.

FAKE_HEATSIBLE (a shell script put first on PATH as `heatsible`) records
each call's argv, the --request file's mode and content, and what
OpenStack credentials it got in its environment (names; the password only
as "matches" or not), writes the --save and --vim-info files as heatsible
does, prints what the test chose (FAKE_STDOUT on stdout; FAKE_STDERR on
stderr when it fails) and exits with FAKE_RC (on every call, or only on
call FAKE_FAIL_AT).

HeatModel answers the calls Tacker's v2 OpenStack infra driver makes
(tacker/sol_refactored/infra_drivers/openstack/heat_utils.HeatClient:
get_resources with nested_depth=2, get_parameters, get_template,
get_status, mark_unhealthy, update_stack, delete_stack, create_stack) for
the PV package's BaseHOT (contrib/tacker/v2/pv_package): the masters and
workers as AutoScalingGroup members (nested stacks with a server and a
port), the storage server, its port and its Cinder volume in the top
stack. It does what Heat does with those calls: a resource marked
unhealthy is replaced at the next update (a server gets a new id in the
same member stack; a volume a new id, its data gone), a group's
desired_capacity adds members or removes members (unhealthy first, else
the oldest). It records every call.
"""

import copy
import json
import uuid

FAKE_HEATSIBLE = r'''#!/bin/sh
# fake heatsible: record what it was given, answer like heatsible -o json
mkdir -p "$FAKE_DIR/calls"
n=$(ls "$FAKE_DIR/calls" | grep -c '\.argv$')
n=$((n + 1))
c="$FAKE_DIR/calls/$n"
: > "$c.argv"
for a in "$@"; do printf '%s\n' "$a" >> "$c.argv"; done
req=""; save=""; vim=""; prev=""
for a in "$@"; do
  if [ "$prev" = "--request" ]; then req="$a"; fi
  if [ "$prev" = "--save" ]; then save="$a"; fi
  if [ "$prev" = "--vim-info" ]; then vim="$a"; fi
  prev="$a"
done
if [ -n "$req" ]; then
  stat -c '%a' "$req" > "$c.mode"
  stat -c '%a' "$(dirname "$req")" > "$c.dirmode"
  cp "$req" "$c.request"
fi
# OpenStack credentials: which variables, and the password compared only
for v in OS_CLOUD OS_AUTH_URL OS_USERNAME OS_PROJECT_NAME \
         OS_USER_DOMAIN_NAME OS_PROJECT_DOMAIN_NAME OS_REGION_NAME \
         OS_INSECURE OS_CACERT; do
  eval "val=\${$v-}"
  if [ -n "$val" ]; then printf '%s=%s\n' "$v" "$val" >> "$c.env"; fi
done
if [ -n "${OS_PASSWORD-}" ]; then
  if [ "$OS_PASSWORD" = "$FAKE_EXPECT_OS_PASSWORD" ]; then
    echo "OS_PASSWORD=matches" >> "$c.env"
  else
    echo "OS_PASSWORD=differs" >> "$c.env"
  fi
fi
touch "$c.env"
if [ -t 0 ]; then echo tty > "$c.stdin"; else cat > "$c.stdin"; fi
echo "heatsible: $2: reading the cluster..." >&2
rc="${FAKE_RC:-0}"
if [ -n "$FAKE_FAIL_AT" ] && [ "$FAKE_FAIL_AT" != "$n" ]; then rc=0; fi
if [ "$rc" = 0 ] && [ -n "$save" ]; then echo 'cluster: vnf-x' > "$save"; fi
if [ "$rc" = 0 ] && [ -n "$vim" ] && [ -n "$FAKE_VIM" ]; then
  (umask 077; printf '%s\n' "$FAKE_VIM" > "$vim")
  if [ -n "$FAKE_VIM_MODE" ]; then chmod "$FAKE_VIM_MODE" "$vim"; fi
fi
if [ "$rc" = 0 ] && [ -n "$FAKE_STDOUT" ]; then printf '%s\n' "$FAKE_STDOUT"; fi
if [ "$rc" != 0 ] && [ -n "$FAKE_STDERR" ]; then
  printf '%s\n' "$FAKE_STDERR" >&2
fi
exit "$rc"
'''

HEAT = 'http://127.0.0.1:28004/v1/project-1'


def _id():
    return str(uuid.uuid4())


class _Clock(object):
    """Heat's creation_time: strictly increasing seconds."""

    def __init__(self):
        self.t = 0

    def now(self):
        self.t += 1
        return '2026-11-27T10:%02d:%02dZ' % (self.t // 60, self.t % 60)


class HeatModel(object):
    """The PV package's stack as Heat would hold it (see the module doc)."""

    GROUPS = (('master_instance', 'masterNode', 'masterNode_CP1',
               'master_node.yaml'),
              ('worker_instance', 'workerNode', 'workerNode_CP2',
               'worker_node.yaml'))

    def __init__(self, inst_id, masters=1, workers=2):
        self.clock = _Clock()
        self.name = 'vnf-%s' % inst_id
        self.id = _id()
        self.calls = []
        self.marked = set()       # (stack id, resource name)
        self.volume_data = {}     # volume id -> what was written on it
        self.deleted_volumes = []
        self.nfv = {'VDU': {'masterNode': {'desired_capacity': masters},
                            'workerNode': {'desired_capacity': workers}}}
        self.groups = {}
        for aspect, vdu, cp, tmpl in self.GROUPS:
            self.groups[aspect] = {
                'stack': '%s-%s-%s' % (self.name, aspect,
                                       uuid.uuid4().hex[:12]),
                'id': _id(), 'vdu': vdu, 'cp': cp, 'type': tmpl,
                'created': self.clock.now(), 'members': []}
        for _ in range(masters):
            self._add_member('master_instance')
        for _ in range(workers):
            self._add_member('worker_instance')
        self.storage = {'server': _id(), 'port': _id(), 'volume': _id(),
                        'created': self.clock.now(),
                        'volume_created': self.clock.now()}

    # ---- the model ----------------------------------------------------

    def _add_member(self, aspect):
        g = self.groups[aspect]
        name = uuid.uuid4().hex[:12]
        g['members'].append({
            'name': name, 'id': _id(),
            'stack': '%s-%s-%s' % (g['stack'], name, uuid.uuid4().hex[:12]),
            'server': _id(), 'port': _id(), 'created': self.clock.now(),
            'server_created': self.clock.now()})

    def member(self, server_id):
        for aspect, g in self.groups.items():
            for m in g['members']:
                if m['server'] == server_id:
                    return aspect, m
        return None, None

    def servers(self, aspect):
        return [m['server'] for m in self.groups[aspect]['members']]

    # ---- Heat's API, as HeatClient calls it ------------------------------

    def _link(self, stack, sid):
        return [{'rel': 'stack', 'href': '%s/stacks/%s/%s' % (HEAT, stack,
                                                              sid)}]

    def get_resources(self, stack_name):
        self.calls.append(('get_resources', stack_name))
        top = self._link(self.name, self.id)
        out = []
        for aspect, g in self.groups.items():
            out.append({'resource_name': aspect,
                        'physical_resource_id': g['id'],
                        'resource_type': 'OS::Heat::AutoScalingGroup',
                        'resource_status': 'UPDATE_COMPLETE',
                        'creation_time': g['created'], 'required_by': [],
                        'links': top})
            for m in g['members']:
                out.append({'resource_name': m['name'],
                            'physical_resource_id': m['id'],
                            'resource_type': g['type'],
                            'resource_status': 'UPDATE_COMPLETE',
                            'creation_time': m['created'], 'required_by': [],
                            'parent_resource': aspect,
                            'links': self._link(g['stack'], g['id'])})
                inner = self._link(m['stack'], m['id'])
                out.append({'resource_name': g['vdu'],
                            'physical_resource_id': m['server'],
                            'resource_type': 'OS::Nova::Server',
                            'resource_status': 'CREATE_COMPLETE',
                            'creation_time': m['server_created'],
                            'required_by': [],
                            'parent_resource': m['name'], 'links': inner})
                out.append({'resource_name': g['cp'],
                            'physical_resource_id': m['port'],
                            'resource_type': 'OS::Neutron::Port',
                            'resource_status': 'CREATE_COMPLETE',
                            'creation_time': m['created'],
                            'required_by': [g['vdu']],
                            'parent_resource': m['name'], 'links': inner})
        s = self.storage
        out.append({'resource_name': 'storage_server_volume',
                    'physical_resource_id': s['volume'],
                    'resource_type': 'OS::Cinder::Volume',
                    'resource_status': 'CREATE_COMPLETE',
                    'creation_time': s['volume_created'],
                    'required_by': ['storage_server'], 'links': top})
        out.append({'resource_name': 'storage_server_CP',
                    'physical_resource_id': s['port'],
                    'resource_type': 'OS::Neutron::Port',
                    'resource_status': 'CREATE_COMPLETE',
                    'creation_time': s['created'],
                    'required_by': ['storage_server'], 'links': top})
        out.append({'resource_name': 'storage_server',
                    'physical_resource_id': s['server'],
                    'resource_type': 'OS::Nova::Server',
                    'resource_status': 'CREATE_COMPLETE',
                    'creation_time': s['created'], 'required_by': [],
                    'links': top})
        return copy.deepcopy(out)

    def get_parameters(self, stack_name):
        self.calls.append(('get_parameters', stack_name))
        return {'nfv': json.dumps(self.nfv)}

    def get_template(self, stack_id):
        self.calls.append(('get_template', stack_id))
        for aspect, g in self.groups.items():
            if stack_id in (g['id'], '%s/%s' % (g['stack'], g['id'])):
                return {'resources': {m['name']: {'properties': {
                    'flavor': 'm1.medium',
                    'image-' + g['vdu']: 'ubuntu-22.04-server-cloudimg-amd64',
                    'net1': 'net'}} for m in g['members']}}
        return {'resources': {}}

    def get_files(self, stack_name):
        return {}

    def get_status(self, stack_name):
        return 'UPDATE_COMPLETE', 'Stack UPDATE completed successfully'

    def get_stack_id(self, stack_name):
        return self.id

    def mark_unhealthy(self, stack_id, resource_name):
        self.calls.append(('mark_unhealthy', stack_id, resource_name))
        self.marked.add((stack_id.split('/')[-1], resource_name))

    def update_stack(self, stack_name, fields, wait=True):
        self.calls.append(('update_stack', stack_name,
                           copy.deepcopy(fields)))
        nfv = (fields.get('parameters') or {}).get('nfv')
        if isinstance(nfv, dict):
            self.nfv = nfv
        for aspect, g in self.groups.items():
            # members marked unhealthy in the group's stack go first
            want = (self.nfv['VDU'].get(g['vdu']) or {}).get(
                'desired_capacity', len(g['members']))
            gone = [m for m in g['members']
                    if (g['id'], m['name']) in self.marked]
            while len(g['members']) > want:
                victim = gone.pop(0) if gone else g['members'][0]
                g['members'].remove(victim)
            while len(g['members']) < want:
                self._add_member(aspect)
            for m in g['members']:
                if (m['id'], g['vdu']) in self.marked or \
                        (g['id'], m['name']) in self.marked:
                    m['server'] = _id()
                    m['server_created'] = self.clock.now()
        s = self.storage
        if (self.id, 'storage_server_volume') in self.marked:
            self.deleted_volumes.append(s['volume'])
            self.volume_data.pop(s['volume'], None)
            s['volume'] = _id()
            s['volume_created'] = self.clock.now()
        if (self.id, 'storage_server') in self.marked:
            s['server'] = _id()
        self.marked = set()

    def delete_stack(self, stack_name, wait=True):
        self.calls.append(('delete_stack', stack_name))
        self.deleted_volumes.append(self.storage['volume'])
        self.volume_data.pop(self.storage['volume'], None)

    def create_stack(self, fields, wait=True):
        calls, deleted = self.calls, self.deleted_volumes
        self.__init__(self.name[len('vnf-'):],
                      self.nfv['VDU']['masterNode']['desired_capacity'],
                      self.nfv['VDU']['workerNode']['desired_capacity'])
        self.calls, self.deleted_volumes = calls, deleted
        self.calls.append(('create_stack', fields.get('stack_name')))
        return self.id
