#
# heatsible test bed: Heat resource plugin with in-engine stand-ins for
# OS::Nova::Server, OS::Neutron::Port, OS::Neutron::FloatingIP and
# OS::Cinder::Volume, for a real Heat that has no Nova, Neutron or Cinder.
#
# Loaded by heat.sh through heat.conf [DEFAULT] plugin_dirs. Plugin modules load
# after the built-ins, so these classes replace the real ones in the global
# registry of that Heat.
#
# Derived from the recipe in ../shared/testbed/heat/vnf-standins (plugin mode):
# GET .../resources/<name> (and the with_detail listing) returns the service's
# JSON, as real Heat does ("show" attribute), e.g. a volume's "attachments" is
# Cinder's list there, while get_attr [vol, attachments] is Heat's *string*
# (Python repr) as on a real cloud.
#
# What this copy adds, for the bed:
#  * addresses come from a per-network pool read from a JSON file
#    ($HEATSIBLE_POOLS, re-read at each allocation so the bed can change it
#    without restarting heat-all):
#      {"networks": {"net_master": ["10.231.0.12"],
#                    "net_worker": ["10.231.0.20-10.231.0.83"],
#                    "net_storage": ["10.231.0.11"]},
#       "floating": {"10.231.0.0/24": "10.231.1.0/24"}}
#    pools.d/*.json beside the pools file are merged in.
#    A floating IP gets the address of its port's fixed IP mapped into the
#    floating network, host bits kept (10.231.0.X -> 10.231.1.X);
#  * allocations are persisted in $HEATSIBLE_ALLOC (JSON keyed by port id),
#    so no address is handed out twice, also across heat-all restarts; a
#    port's delete releases its address.
#  * an address is unique across the bed (its hosts share one L2), except on
#    the networks a pools file lists in "separate": those are unique within
#    their own network only, as Neutron's addresses are unique per network,
#    so a second stack on them gets the very addresses the bed's stack holds
#    on the bed's networks (the bed's hosts, for a test's stack beside the
#    bed's, internal/e2e TestThreeMasters); a floating IP of a port on such
#    a network is unique among that network's floating IPs likewise.
#
# Pitfall (from the recipe): get_resource/get_attr inside self.properties only
# resolve during a create/update traversal; when the API later loads the stack
# to answer a GET they come back as logical names. Every cross-resource
# reference is therefore captured in resource data at create/update time.
import datetime
import fcntl
import ipaddress
import json
import os
import uuid

from heat.common import exception
from heat.engine import properties
from heat.engine import resource
from heat.engine.resources.openstack.cinder import volume as _vol
from heat.engine.resources.openstack.neutron import floatingip as _fip
from heat.engine.resources.openstack.neutron import port as _port
from heat.engine.resources.openstack.nova import server as _srv
from heat.engine import notification as _notification

# Heat 19 with this oslo.messaging: the notifier first sanitises the context
# (oslo_messaging.notify.notifier._sanitize_context), which rebuilds a
# StoredContext without its trust; serialising that one loads its roles from
# Keystone and fails ("Keystone API connection failed, no password trust or
# auth_token!"). Every autoscaling notification does this, so a ScalingPolicy
# signal (group.adjust sends one before resizing) fails with AuthorizationFailure
# and the group never scales. The bed's heat.conf has notifications driver = noop:
# nothing would be sent anyway, so Heat's notify is made a no-op here.
def _no_notify(context, event_type, level, body):
    return None


_notification.notify = _no_notify

SUBNET_NS = uuid.UUID('7b5c2d7e-52b3-4b7e-9d1a-0c0ffee00001')
EXT_NET_ID = '9e1c5e3a-3c0e-4b2b-9a7e-0000000e0e0e'
HOST = 'compute-0'


def _pools_path():
    return os.environ.get('HEATSIBLE_POOLS', '/nonexistent/pools.json')


def _alloc_path():
    return os.environ.get('HEATSIBLE_ALLOC', '/nonexistent/allocations.json')


def _fail(msg):
    raise exception.Error('heatsible stand-in: ' + msg)


def _load_pools():
    """The pools file, plus every pools.d/*.json beside it (networks and
    floating rules merged; e.g. the Go integration test adds its own
    networks there without touching the bed's pools)."""
    path = _pools_path()
    try:
        with open(path) as f:
            pools = json.load(f)
    except (OSError, ValueError) as e:
        _fail('cannot read address pools %s: %s' % (path, e))
    d = os.path.join(os.path.dirname(path), 'pools.d')
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not name.endswith('.json'):
            continue
        try:
            with open(os.path.join(d, name)) as f:
                extra = json.load(f)
        except (OSError, ValueError) as e:
            _fail('cannot read address pools %s: %s' % (os.path.join(d, name), e))
        for key in ('networks', 'floating'):
            merged = dict(pools.get(key) or {})
            merged.update(extra.get(key) or {})
            pools[key] = merged
        pools['separate'] = list(pools.get('separate') or []) + list(extra.get('separate') or [])
    return pools


def _space(network, separate):
    """The address space an allocation on network belongs to: the network
    itself when it is separate (a floating network is keyed "FLOAT@PORTNET",
    separate when its port's network is), else the bed's one space ''."""
    base = network.split('@', 1)[1] if '@' in network else network
    return network if base in separate else ''


def _pool_addresses(entries):
    """Expand ["10.0.0.5", "10.0.0.20-10.0.0.35", "10.0.2.0/28"] in order."""
    for e in entries:
        e = str(e).strip()
        if '-' in e:
            a, b = (ipaddress.ip_address(x.strip()) for x in e.split('-', 1))
            while a <= b:
                yield str(a)
                a += 1
        elif '/' in e:
            for h in ipaddress.ip_network(e, strict=False).hosts():
                yield str(h)
        else:
            yield str(ipaddress.ip_address(e))


class _Allocations(object):
    """The allocation file, locked and rewritten atomically."""

    def __enter__(self):
        path = _alloc_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._lock = open(path + '.lock', 'a')
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                self.data = json.load(f)
        except FileNotFoundError:
            self.data = {}
        except ValueError as e:
            self.close()
            _fail('allocation file %s is corrupt: %s' % (path, e))
        return self

    def save(self):
        path = _alloc_path()
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)

    def close(self):
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()

    def __exit__(self, *a):
        self.close()
        return False


def allocate(kind, key, network, fixed=None):
    """Return the address for resource id key (allocating it if new)."""
    with _Allocations() as al:
        if key in al.data:
            return al.data[key]['ip']
        pools = _load_pools()
        separate = set(pools.get('separate') or [])
        space = _space(network, separate)
        used = set(v['ip'] for v in al.data.values()
                   if _space(v.get('network') or '', separate) == space)
        ip = fixed
        if ip is None:
            entries = (pools.get('networks') or {}).get(network)
            if entries is None:
                _fail('network %r has no pool in %s (networks: %s)' % (
                    network, _pools_path(),
                    ', '.join(sorted(pools.get('networks') or {}))))
            for cand in _pool_addresses(entries):
                if cand not in used:
                    ip = cand
                    break
            if ip is None:
                _fail('pool of network %r is exhausted (%s)' % (network, entries))
        elif ip in used:
            _fail('address %s is already allocated' % ip)
        al.data[key] = {'kind': kind, 'network': network, 'ip': ip}
        al.save()
        return ip


def lookup(key):
    """The address allocated to resource id key, or None."""
    with _Allocations() as al:
        v = al.data.get(key)
        return v['ip'] if v else None


def network_of(key):
    """The network of the allocation of resource id key, or None."""
    with _Allocations() as al:
        v = al.data.get(key)
        return v.get('network') if v else None


def release(key):
    with _Allocations() as al:
        if al.data.pop(key, None) is not None:
            al.save()


def _hook(kind, *args):
    """Run <pools dir>/hooks/KIND ARGS if it is there (the bed's hooks,
    installed by testbed/tacker/tacker.sh). volume: gives a volume that Heat
    attaches to a bed host a block device there, and takes it away when the
    volume is deleted, as Nova and Cinder would. server: a server Heat deletes
    is a VM gone (its host's mounts and join state go). A failing hook fails
    the resource, with its output."""
    hook = os.path.join(os.path.dirname(_pools_path()), 'hooks', kind)
    if not os.access(hook, os.X_OK):
        return
    import subprocess
    try:
        out = subprocess.run([hook] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=120, check=False)
    except subprocess.TimeoutExpired:
        _fail('%s hook %s %s: no answer in 120 s' % (kind, hook, ' '.join(map(str, args))))
    if out.returncode != 0:
        _fail('%s hook %s %s failed (exit %d): %s' % (
            kind, hook, ' '.join(map(str, args)), out.returncode,
            out.stdout.decode('utf-8', 'replace')[-2000:]))


def _volume_hook(*args):
    _hook('volume', *args)


def floating_for(fixed_ip):
    rules = _load_pools().get('floating') or {}
    addr = ipaddress.ip_address(fixed_ip)
    for src, dst in sorted(rules.items()):
        s = ipaddress.ip_network(src, strict=False)
        d = ipaddress.ip_network(dst, strict=False)
        if addr in s and s.prefixlen == d.prefixlen:
            host = int(addr) - int(s.network_address)
            return str(d.network_address + host)
    _fail('no floating rule in %s covers %s (rules: %s)' % (
        _pools_path(), fixed_ip, rules))


def _loose(real_schema):
    out = {}
    for name, s in real_schema.items():
        if getattr(s, 'support_status', None) is not None and \
                s.support_status.status == 'HIDDEN':
            continue
        out[name] = properties.Schema(s.type, s.description, required=s.required,
                                      default=s.default, update_allowed=True)
    return out


def _now():
    return datetime.datetime.utcnow().strftime('%Y-%m-%dT%H:%M:%S.%f')


def _net_id(name):
    return str(uuid.uuid5(SUBNET_NS, 'net:' + (name or '')))


def _subnet_id(name):
    return str(uuid.uuid5(SUBNET_NS, 'subnet:' + (name or '')))


class _StandIn(resource.Resource):
    default_client_name = None
    entity = None

    def handle_create(self):
        self.resource_id_set(str(uuid.uuid4()))
        self.data_set('created_at', _now())
        # the hooks at delete need the stack's name, and a resource loaded
        # for its deletion has a stack whose name is '' (seen: every
        # delete hook was told stack '')
        self.data_set('stack_name', self.stack.name if self.stack else '')
        self._on_create()

    def _stack_name(self):
        return self.data().get('stack_name') or (
            self.stack.name if self.stack else '')

    def _on_create(self):
        pass

    def handle_update(self, json_snippet, tmpl_diff, prop_diff):
        if prop_diff:
            self.properties = json_snippet.properties(self.properties_schema,
                                                      self.context)
            self._on_update()

    def _on_update(self):
        pass

    def handle_delete(self):
        return None

    def _name(self):
        return self.properties.get('name') or self.physical_resource_name()

    def _peers(self, cls):
        for r in self.stack.resources.values():
            if isinstance(r, cls) and r.resource_id:
                yield r

    def _by_id(self, cls, rid):
        for r in self._peers(cls):
            if r.resource_id == rid:
                return r
        return None

    def _show_resource(self):
        return self._show() if self.resource_id else None

    def _resolve_attribute(self, name):
        if not self.resource_id:
            return None
        return self._show().get(name)


class Port(_StandIn):
    properties_schema = _loose(_port.Port.properties_schema)
    attributes_schema = _port.Port.attributes_schema

    def _on_create(self):
        fixed = None
        for f in self.properties.get('fixed_ips') or []:
            if isinstance(f, dict) and f.get('ip_address'):
                fixed = f['ip_address']
        net = self.properties.get('network') or ''
        self.data_set('network', net)
        self.data_set('ip', allocate('port', self.resource_id, net, fixed))

    def handle_delete(self):
        if self.resource_id:
            release(self.resource_id)
        return None

    def ip(self):
        return self.data().get('ip')

    def network(self):
        return self.data().get('network') or ''

    def _show(self):
        u = self.resource_id
        server = None
        for s in self._peers(Server):
            if u in s.port_ids():
                server = s
        return {
            'id': u, 'name': self._name(), 'network_id': _net_id(self.network()),
            'tenant_id': self.context.project_id, 'project_id': self.context.project_id,
            'mac_address': self.properties.get('mac_address') or
            'fa:16:3e:%s:%s:%s' % (u[0:2], u[2:4], u[4:6]),
            'admin_state_up': True, 'status': 'ACTIVE' if server else 'DOWN',
            'device_id': server.resource_id if server else '',
            'device_owner': 'compute:nova' if server else '',
            'fixed_ips': [{'subnet_id': _subnet_id(self.network()),
                           'ip_address': self.ip()}],
            'allowed_address_pairs': [], 'extra_dhcp_opts': [],
            'security_groups': ['8a1b7c3e-0000-4000-8000-000000000def'],
            'description': '', 'binding:vnic_type': 'normal',
            'port_security_enabled': True, 'qos_policy_id': None,
            'propagate_uplink_status': False, 'dns_name': '', 'dns_assignment': [],
            'tags': [], 'created_at': self.data().get('created_at'),
            'revision_number': 1,
        }

    def _resolve_attribute(self, name):
        if not self.resource_id:
            return None
        if name == 'network':
            return {'id': _net_id(self.network()), 'name': self.network(),
                    'subnets': [_subnet_id(self.network())], 'status': 'ACTIVE'}
        if name == 'subnets':
            return [{'id': _subnet_id(self.network()), 'ip_version': 4,
                     'network_id': _net_id(self.network())}]
        return self._show().get(name)


class FloatingIP(_StandIn):
    properties_schema = _loose(_fip.FloatingIP.properties_schema)
    attributes_schema = _fip.FloatingIP.attributes_schema

    def _on_create(self):
        self._on_update()
        fixed = self.data().get('fixed_ip')
        want = self.properties.get('floating_ip_address')
        if not want:
            if not fixed:
                _fail('floating IP %s has no port with an address' % self.name)
            want = floating_for(fixed)
        net = self.properties.get('floating_network') or ''
        port_net = network_of(self.data().get('port_id') or '')
        if port_net and port_net in (_load_pools().get('separate') or []):
            net = '%s@%s' % (net, port_net)
        self.data_set('fip', allocate('floatingip', self.resource_id, net, want))

    def handle_delete(self):
        if self.resource_id:
            release(self.resource_id)
        return None

    def _on_update(self):
        pid = self.properties.get('port_id') or ''
        self.data_set('port_id', pid)
        fixed = self.properties.get('fixed_ip_address') or ''
        if not fixed and pid:
            # In a convergence traversal the peers in self.stack are not
            # loaded with their ids: the allocation file knows the port.
            fixed = lookup(pid) or ''
        self.data_set('fixed_ip', fixed)

    def _show(self):
        d = self.data()
        port = self._by_id(Port, d.get('port_id'))
        return {
            'id': self.resource_id, 'floating_ip_address': d.get('fip'),
            'fixed_ip_address': d.get('fixed_ip') or (port.ip() if port else None),
            'floating_network_id': EXT_NET_ID, 'port_id': d.get('port_id') or None,
            'router_id': '5d2f8a4c-0000-4000-8000-00000000a001',
            'status': 'ACTIVE' if port else 'DOWN',
            'tenant_id': self.context.project_id, 'project_id': self.context.project_id,
            'description': '', 'tags': [], 'created_at': self.data().get('created_at'),
        }


class Server(_StandIn):
    properties_schema = _loose(_srv.Server.properties_schema)
    attributes_schema = _srv.Server.attributes_schema

    def _on_create(self):
        self._on_update()
        ips = [lookup(p) or '' for p in self.port_ids()]
        # kept for the server hook at delete (the ports may be gone by then)
        self.data_set('ips', ','.join(ips))
        for vid, dev in self.volume_devices():
            _volume_hook('attach', vid, dev, self.resource_id, ','.join(ips),
                         self.stack.name if self.stack else '')

    def _on_update(self):
        ports = [n.get('port') for n in (self.properties.get('networks') or [])
                 if isinstance(n, dict) and n.get('port')]
        vols = []
        for key in ('block_device_mapping_v2', 'block_device_mapping'):
            for b in self.properties.get(key) or []:
                if isinstance(b, dict) and b.get('volume_id') and \
                        str(b.get('boot_index', -1)) != '0':
                    vols.append((b['volume_id'], '/dev/' + (b.get('device_name') or 'vdb')))
        self.data_set('ports', json.dumps(ports))
        self.data_set('volumes', json.dumps(vols))

    def handle_delete(self):
        if self.resource_id:
            ips = self.data().get('ips')
            if ips is None:
                ips = ','.join(lookup(p) or '' for p in self.port_ids())
            _hook('server', 'delete', self.resource_id, ips,
                  self._stack_name())
        return None

    def port_ids(self):
        return json.loads(self.data().get('ports') or '[]')

    def volume_devices(self):
        return [tuple(v) for v in json.loads(self.data().get('volumes') or '[]')]

    def _addrs(self):
        out = []
        for pid in self.port_ids():
            p = self._by_id(Port, pid)
            if p is not None:
                out.append((p.network(), p.ip(), p._show()['mac_address']))
        return out

    def _show(self):
        u = self.resource_id
        flavor = self.properties.get('flavor')
        image = self.properties.get('image')
        addresses = {}
        for net, ip, mac in self._addrs():
            addresses.setdefault(net, []).append(
                {'version': 4, 'addr': ip, 'OS-EXT-IPS:type': 'fixed',
                 'OS-EXT-IPS-MAC:mac_addr': mac})
        return {
            'id': u, 'name': self._name(), 'status': 'ACTIVE',
            'addresses': addresses,
            'flavor': {'original_name': flavor, 'vcpus': 2, 'ram': 4096, 'disk': 45,
                       'ephemeral': 0, 'swap': 0, 'extra_specs': {}},
            'image': {'id': image} if image else '',
            'key_name': self.properties.get('key_name'),
            'metadata': self.properties.get('metadata') or {},
            'OS-EXT-SRV-ATTR:host': HOST, 'OS-EXT-SRV-ATTR:hypervisor_hostname': HOST,
            'OS-EXT-SRV-ATTR:instance_name': 'instance-' + u[:8],
            'OS-EXT-AZ:availability_zone': self.properties.get('availability_zone') or 'nova',
            'OS-EXT-STS:vm_state': 'active', 'OS-EXT-STS:power_state': 1,
            'OS-EXT-STS:task_state': None,
            'os-extended-volumes:volumes_attached': [
                {'id': v, 'delete_on_termination': False} for v, _ in self.volume_devices()],
            'security_groups': [{'name': 'default'}], 'server_groups': [],
            'tenant_id': self.context.project_id, 'user_id': self.context.user_id,
            'accessIPv4': '', 'accessIPv6': '', 'config_drive': '', 'progress': 0,
            'created': self.data().get('created_at'), 'tags': [],
        }

    def _resolve_attribute(self, name):
        if not self.resource_id:
            return None
        addrs = self._addrs()
        if name == 'networks':
            out = {}
            for net, ip, _ in addrs:
                out.setdefault(net, []).append(ip)
                out.setdefault(_net_id(net), []).append(ip)
            return out
        if name == 'first_address':
            return addrs[0][1] if addrs else ''
        if name == 'instance_name':
            return 'instance-' + self.resource_id[:8]
        if name in ('console_urls', 'os_collect_config'):
            return {}
        return self._show().get(name)


class Volume(_StandIn):
    properties_schema = _loose(_vol.CinderVolume.properties_schema)
    attributes_schema = _vol.CinderVolume.attributes_schema

    def handle_delete(self):
        if self.resource_id:
            _volume_hook('delete', self.resource_id, self._stack_name())
        return None

    def _attachments(self):
        out = []
        for s in self._peers(Server):
            for vid, dev in s.volume_devices():
                if vid == self.resource_id:
                    out.append({'id': vid, 'attachment_id': str(uuid.uuid5(
                        uuid.NAMESPACE_URL, vid + s.resource_id)),
                        'volume_id': vid, 'server_id': s.resource_id,
                        'host_name': HOST, 'device': dev,
                        'attached_at': self.data().get('created_at')})
        return out

    def _show(self):
        att = self._attachments()
        return {
            'id': self.resource_id, 'name': self._name(),
            'description': self.properties.get('description'),
            'size': self.properties.get('size') or 1,
            'status': 'in-use' if att else 'available', 'attachments': att,
            'availability_zone': self.properties.get('availability_zone') or 'nova',
            'bootable': 'false', 'encrypted': False, 'multiattach': False,
            'volume_type': self.properties.get('volume_type') or '__DEFAULT__',
            'metadata': self.properties.get('metadata') or {},
            'snapshot_id': None, 'source_volid': None,
            'created_at': self.data().get('created_at'), 'user_id': self.context.user_id,
            'os-vol-tenant-attr:tenant_id': self.context.project_id,
            'replication_status': None, 'consistencygroup_id': None,
        }

    def _resolve_attribute(self, name):
        # mirrors heat/engine/resources/openstack/cinder/volume.py
        if not self.resource_id:
            return None
        vol = self._show()
        if name == 'metadata':
            return json.dumps(vol['metadata'])
        if name == 'metadata_values':
            return vol['metadata']
        if name == 'display_name':
            return vol['name']
        if name == 'display_description':
            return vol['description']
        if name == 'attachments_list':
            return vol['attachments']
        return str(vol.get(name))


def resource_mapping():
    return {
        'OS::Nova::Server': Server,
        'OS::Neutron::Port': Port,
        'OS::Neutron::FloatingIP': FloatingIP,
        'OS::Cinder::Volume': Volume,
    }
