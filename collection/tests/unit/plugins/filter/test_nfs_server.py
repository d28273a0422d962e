# -*- coding: utf-8 -*-
"""Unit tests of plugins/filter/nfs_server.py, on outputs of the real tools
recorded on the test bed (recorded/README.md says how).

    make role-tests
"""

import json
import os
import unittest

from helpers import ROLES
from ansible_collections.heatsible.nfv.plugins.filter import nfs_server as ns

HERE = os.path.dirname(os.path.abspath(__file__))


def rec(name):
    with open(os.path.join(HERE, 'recorded', name)) as f:
        return f.read()


VOLUMES = [{'id': 'x', 'mount_to': '/volume'}]
DEFAULT = 'rw,sync,no_subtree_check,root_squash'


def table(exports, self_client=True):
    return ns.nfs_server_table(exports, DEFAULT, self_client, '10.231.0.11', VOLUMES)


LONG = '/volume/nfs/rec-long-directory-name-for-the-record'
# The clients of the recorded exports (recorded/exports.txt).
RECORDED = [
    {'dir': '/volume/nfs/pv1', 'to': '10.231.0.0/24'},
    {'dir': LONG, 'to': '*', 'options': 'ro,sync,no_subtree_check'},
    {'dir': LONG, 'to': 'storage'},
    {'dir': LONG, 'to': 'master-0'},
    {'dir': LONG, 'to': '2001:db8::/64'},
    {'dir': LONG, 'to': '2001:db8::5'},
    {'dir': LONG, 'to': '10.231.0.0/255.255.255.0'},
    {'dir': LONG, 'to': '10.231.0.0/16'},
    {'dir': '/srv/rec', 'to': '10.231.0.0/24'},
]
NAMES = {  # what getent ahosts said on the storage host (recorded/getent-*.txt)
    'storage': {'canonical': 'storage', 'addresses': ['10.231.0.11']},
    'master-0': {'canonical': 'master-0', 'addresses': ['10.231.0.12']},
}


def verify_doc(**kw):
    doc = {'names': NAMES, 'exportfs': '', 'port': {'open': True, 'seconds': 0},
           'showmount': {'ok': True, 'error': '', 'text': ''}, 'rpcinfo': '', 'nfsls': []}
    doc.update(kw)
    return json.dumps(doc)


def settings(**kw):
    s = {'impl': 'kernel', 'bind_address': '10.231.0.11', 'url_host': '10.231.0.11', 'versions': [3, 4],
         'serve': True, 'no_nfsd': None, 'ports': {}}
    s.update(kw)
    return s


class Table(unittest.TestCase):
    def test_groups_and_self_client(self):
        t = table([{'dir': '/volume/a', 'to': '10.0.0.0/24'}, {'dir': '/volume/a', 'to': '10.1.0.0/24', 'options': 'ro'}])
        self.assertEqual(len(t), 1)
        self.assertEqual([c['to'] for c in t[0]['clients']], ['10.0.0.0/24', '10.1.0.0/24', '10.231.0.11'])
        self.assertEqual(t[0]['clients'][2]['options'], DEFAULT.split(','))
        self.assertEqual(t[0]['mount_to'], '/volume')

    def test_export_id_is_stable(self):
        a = table([{'dir': '/volume/a', 'to': 'x'}, {'dir': '/volume/b', 'to': 'x'}])
        b = table([{'dir': '/volume/b', 'to': 'x'}, {'dir': '/volume/a', 'to': 'x'}])
        self.assertEqual(sorted((t['dir'], t['export_id']) for t in a), sorted((t['dir'], t['export_id']) for t in b))

    def test_mount_point_itself_and_longest_match(self):
        vols = [{'mount_to': '/volume'}, {'mount_to': '/volume/inner'}]
        t = ns.nfs_server_table([{'dir': '/volume', 'to': 'x'}, {'dir': '/volume/inner/a', 'to': 'x'},
                                 {'dir': '/volumes', 'to': 'x'}], DEFAULT, False, '', vols)
        self.assertEqual([e['mount_to'] for e in t], ['/volume', '/volume/inner', ''])

    def test_kernel_options_carry_mp(self):
        c = {'to': 'x', 'options': ['rw']}
        self.assertEqual(ns.nfs_server_kernel_options(c, '/volume'), ['rw', 'mp=/volume'])
        self.assertEqual(ns.nfs_server_kernel_options(c, ''), ['rw'])
        self.assertEqual(ns.nfs_server_kernel_options({'to': 'x', 'options': ['rw', 'mp=/other']}, '/volume'),
                         ['rw', 'mp=/other'])


class Exports(unittest.TestCase):
    """/etc/exports: one line per export, from nfs_server_exports_lines,
    each ended by the template (templates/exports.j2), whatever blank
    lines the template has or has not."""

    TABLE = [
        {'dir': '/volume/nfs/pv1', 'mount_to': '/volume', 'clients': [
            {'to': '10.231.0.0/24', 'options': ['rw', 'sync']}, {'to': '10.231.0.11', 'options': ['ro']}]},
        {'dir': '/srv/rec', 'mount_to': '', 'clients': [{'to': '*', 'options': ['rw', 'mp=/srv']}]},
    ]
    LINES = ['/volume/nfs/pv1 10.231.0.0/24(rw,sync,mp=/volume) 10.231.0.11(ro,mp=/volume)',
             '/srv/rec *(rw,mp=/srv)']

    def test_lines(self):
        self.assertEqual(ns.nfs_server_exports_lines(self.TABLE), self.LINES)
        self.assertEqual(ns.nfs_server_exports_lines([]), [])

    def test_lines_of_the_table(self):
        got = ns.nfs_server_exports_lines(table(RECORDED))
        self.assertEqual(len(got), 3)
        self.assertEqual(got[0], '/volume/nfs/pv1 10.231.0.0/24(%s,mp=/volume) 10.231.0.11(%s,mp=/volume)' % (DEFAULT, DEFAULT))
        self.assertTrue(all('\n' not in line for line in got))

    def test_template(self):
        # Rendered as Ansible's template module and lookup do (trim_blocks).
        try:
            import jinja2
        except ImportError:
            self.skipTest('no jinja2')
        with open(os.path.join(ROLES, 'nfs_server', 'templates', 'exports.j2')) as f:
            src = f.read()
        env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
        env.filters['heatsible.nfv.nfs_server_exports_lines'] = ns.nfs_server_exports_lines
        out = env.from_string(src).render(ansible_managed='Ansible managed', nfs_server_table=self.TABLE)
        body = [line for line in out.split('\n') if not line.startswith('#')]
        self.assertEqual(body, self.LINES + [''])
        self.assertTrue(out.endswith('\n') and not out.endswith('\n\n'))


class DefaultOptions(unittest.TestCase):
    """The role's default export options squash root (issue 24): an export
    without options of its own must not give every client's root the
    server's root. no_root_squash is a choice an export makes."""

    def defaults(self):
        try:
            import yaml
        except ImportError:
            self.skipTest('no PyYAML')
        with open(os.path.join(ROLES, 'nfs_server', 'defaults', 'main.yml')) as f:
            return yaml.safe_load(f)

    def test_default_squashes_root(self):
        opts = self.defaults()['nfs_export_options'].split(',')
        self.assertNotIn('no_root_squash', opts)
        self.assertNotIn('no_all_squash', opts)
        self.assertTrue('root_squash' in opts or 'all_squash' in opts, opts)

    def test_an_export_without_options_squashes_root(self):
        default = self.defaults()['nfs_export_options']
        t = ns.nfs_server_table([{'dir': '/volume/nfs/pv1', 'to': '10.231.0.0/24'},
                                 {'dir': '/volume/nfs/pv2', 'to': '10.231.0.0/24', 'options': 'rw,sync,no_root_squash'}],
                                default, True, '10.231.0.11', VOLUMES)
        lines = ns.nfs_server_exports_lines(t)
        self.assertEqual(lines[0], '/volume/nfs/pv1 10.231.0.0/24(rw,sync,no_subtree_check,root_squash,mp=/volume) '
                                   '10.231.0.11(rw,sync,no_subtree_check,root_squash,mp=/volume)')
        # An export that asks for no_root_squash gets it.
        self.assertIn('10.231.0.0/24(rw,sync,no_root_squash,mp=/volume)', lines[1])


class Files(unittest.TestCase):
    def test_dropin(self):
        d = ns.nfs_server_unit_dropin(['/volume', '/volume2'])
        self.assertIn('\n[Unit]\nRequiresMountsFor=/volume /volume2\n', d)
        self.assertIn('\nExecStartPre=/bin/mountpoint -q /volume\nExecStartPre=/bin/mountpoint -q /volume2\n', d)
        self.assertNotIn('ExecStartPre', ns.nfs_server_unit_dropin([]))

    def test_nfs_conf(self):
        c = ns.nfs_server_nfs_conf({'mountd': 20048, 'statd': 32765, 'statd_outgoing': 32766, 'lockd': 32768})
        self.assertIn('[mountd]\nport = 20048\n', c)
        self.assertIn('[statd]\nport = 32765\noutgoing-port = 32766\n', c)
        self.assertIn('[lockd]\nport = 32768\nudp-port = 32768\n', c)


class Params(unittest.TestCase):
    def test_mount_point_for_systemd(self):
        p = ns.nfs_server_param_problems('kernel', '10.0.0.1', True, [], [], [], [], ['/volume 2', '/ok'])
        self.assertEqual(len(p), 1)
        self.assertIn("'/volume 2' has characters that cannot go into a systemd unit", p[0])

    def test_bad_impl(self):
        self.assertIn('nfs_server_impl must be kernel or ganesha (is knfsd).',
                      ns.nfs_server_param_problems('knfsd', '10.0.0.1', True, [], [], [], [], []))


class Parsers(unittest.TestCase):
    def test_exportfs_long_paths_break_the_line(self):
        got = ns.parse_exportfs(rec('exportfs-v.txt'))
        clients = sorted((p, c) for p, c, _ in got)
        self.assertIn(('/volume/nfs/pv1', '10.231.0.0/24'), clients)
        self.assertIn((LONG, '<world>'), clients)
        self.assertIn((LONG, '2001:db8::/64'), clients)
        self.assertIn(('/srv/rec', '10.231.0.0/24'), clients)
        opts = [o for p, c, o in got if p == '/volume/nfs/pv1' and c == '10.231.0.0/24'][0]
        self.assertIn('mountpoint=/volume', opts)
        self.assertEqual(len(got), 10)

    def test_showmount(self):
        got = ns.parse_showmount(rec('showmount-ganesha.txt'))
        self.assertEqual(got['/volume/nfs/pv1'], ['10.231.0.0/24', '10.231.0.11/32'])

    def test_rpcinfo(self):
        got = ns.parse_rpcinfo(rec('rpcinfo-ganesha.txt'))
        self.assertIn(2049, got[(100003, 'tcp')])
        self.assertEqual(ns.parse_rpcinfo(rec('rpcinfo-kernel-mountd.txt'))[(100005, 'tcp')], {20048})

    def test_showmount_kernel(self):
        got = ns.parse_showmount(rec('showmount-kernel.txt'))
        self.assertEqual(got[LONG], ['(everyone)'])
        self.assertEqual(got['/volume/nfs/pv1'], ['10.231.0.0/24'])
        self.assertEqual(got['/srv/rec'], ['10.231.0.0/24'])


class VerifyKernel(unittest.TestCase):
    def test_recorded_exportfs_matches_every_form(self):
        # (no volumes: the recorded long export has no mp=, see test_missing_mp)
        t = ns.nfs_server_table(RECORDED, DEFAULT, False, '10.231.0.11', [])
        v = ns.nfs_server_verify(verify_doc(exportfs=rec('exportfs-v.txt')), t, settings(serve=False, no_nfsd='bed'))
        self.assertEqual(v['problems'], [])
        self.assertIn('in the kernel export table (exportfs -v). NOT VERIFIED over NFS: this host cannot serve NFS (bed)',
                      v['summary'])

    def test_host_name_printed_as_its_address(self):
        """exportfs printed the client "storage" as 10.231.0.11."""
        self.assertTrue(ns.client_listed('storage', ['10.231.0.11'], NAMES))
        self.assertFalse(ns.client_listed('storage', ['10.231.0.12'], NAMES))
        self.assertTrue(ns.client_listed('master-0', ['master-0'], NAMES))

    def test_world(self):
        self.assertTrue(ns.client_listed('*', ['<world>'], {}))
        self.assertTrue(ns.client_listed('*', ['*'], {}))
        self.assertFalse(ns.client_listed('10.0.0.0/24', ['<world>'], {}))

    def test_networks_in_any_notation(self):
        self.assertTrue(ns.client_listed('10.231.0.0/24', ['10.231.0.0/255.255.255.0'], {}))
        self.assertTrue(ns.client_listed('10.231.0.11', ['10.231.0.11/32'], {}))
        self.assertTrue(ns.client_listed('2001:db8::5', ['2001:db8::5/128'], {}))
        self.assertTrue(ns.client_listed('2001:db8::/64', ['2001:DB8::/64'], {}))
        self.assertFalse(ns.client_listed('10.231.0.0/24', ['10.231.0.0/16'], {}))

    def test_missing_export(self):
        t = table([{'dir': '/volume/nfs/missing', 'to': '10.231.0.0/24'}])
        v = ns.nfs_server_verify(verify_doc(exportfs=rec('exportfs-v.txt')), t, settings(serve=False, no_nfsd='bed'))
        self.assertEqual(len(v['problems']), 2)  # the network and the server's own address
        self.assertIn('has no /volume/nfs/missing for 10.231.0.0/24 in exportfs -v', v['problems'][0])

    def test_mp_present(self):
        t = table([{'dir': '/volume/nfs/pv1', 'to': '10.231.0.0/24'}])  # + the self client 10.231.0.11
        v = ns.nfs_server_verify(verify_doc(exportfs=rec('exportfs-v.txt')), t, settings(serve=False, no_nfsd='bed'))
        self.assertEqual(v['problems'], [])

    def test_missing_mp(self):
        t = ns.nfs_server_table([{'dir': LONG, 'to': '10.231.0.0/16'}], DEFAULT, False, '', VOLUMES)
        v = ns.nfs_server_verify(verify_doc(exportfs=rec('exportfs-v.txt')), t, settings(serve=False, no_nfsd='bed'))
        self.assertIn('without mp=/volume in exportfs -v', v['problems'][0])


class VerifyServing(unittest.TestCase):
    def t(self):
        return table([{'dir': '/volume/nfs/pv1', 'to': '10.231.0.0/24'}, {'dir': '/volume/nfs/pv2', 'to': '10.231.0.0/24'}])

    def ok_nfsls(self):
        return [{'dir': d, 'version': str(v), 'ok': True, 'error': ''} for d in ('/volume/nfs/pv1', '/volume/nfs/pv2')
                for v in (3, 4)]

    def test_ganesha_recorded(self):
        v = ns.nfs_server_verify(verify_doc(exportfs='', showmount={'ok': True, 'error': '', 'text': rec('showmount-ganesha.txt')},
                                            rpcinfo=rec('rpcinfo-ganesha.txt'), nfsls=self.ok_nfsls()),
                                 self.t(), settings(impl='ganesha'))
        self.assertEqual(v['problems'], [])
        self.assertIn('listed by its MOUNT service (showmount -e), read over NFSv3/v4 (nfs-ls)', v['summary'])

    def test_port_closed(self):
        v = ns.nfs_server_verify(verify_doc(port={'open': False, 'seconds': 30}), self.t(), settings(impl='ganesha'))
        self.assertEqual(v['problems'], ['does not answer on 10.231.0.11:2049 after 30 s'])

    def test_unpinned_ports(self):
        ports = {'mountd': 20048, 'lockd': 32768, 'statd': 32765, 'statd_outgoing': 32766}
        v = ns.nfs_server_verify(verify_doc(showmount={'ok': True, 'error': '', 'text': rec('showmount-ganesha.txt')},
                                            rpcinfo=rec('rpcinfo-ganesha.txt'), nfsls=self.ok_nfsls()),
                                 self.t(), settings(impl='ganesha', ports=ports))
        self.assertEqual(len(v['problems']), 3)
        for w in ['has mountd on TCP port(s) ', 'not the pinned 20048', 'nlockmgr', 'status (rpc.statd)',
                  'NFSv3 clients behind the security group cannot reach it']:
            self.assertIn(w, ' '.join(v['problems']))

    def test_nfs_ls_absent(self):
        v = ns.nfs_server_verify(verify_doc(showmount={'ok': True, 'error': '', 'text': rec('showmount-ganesha.txt')},
                                            nfsls='absent'), self.t(), settings(impl='ganesha'))
        self.assertEqual(v['problems'], [])
        self.assertIn('NOT VERIFIED by an NFS client: nfs-ls (libnfs-utils) is not installed on this host', v['summary'])
        self.assertNotIn('host:', v['summary'])
        # the run could not install it: the summary says why
        why = "the run could not install libnfs-utils: No package matching 'libnfs-utils' is available (on Ubuntu"
        v = ns.nfs_server_verify(verify_doc(showmount={'ok': True, 'error': '', 'text': rec('showmount-ganesha.txt')},
                                            nfsls='absent'), self.t(), dict(settings(impl='ganesha'), nfsls_why=why))
        self.assertIn('is not installed on this host: ' + why, v['summary'])

    def test_nfs_ls_fails(self):
        nfsls = self.ok_nfsls()
        nfsls[1].update(ok=False, error='nfs_mount failed: RPC error: Mount failed with error MNT3ERR_ACCES(13)')
        v = ns.nfs_server_verify(verify_doc(showmount={'ok': True, 'error': '', 'text': rec('showmount-ganesha.txt')},
                                            nfsls=nfsls), self.t(), settings(impl='ganesha'))
        self.assertIn('does not serve nfs://10.231.0.11/volume/nfs/pv1 over NFSv4 ("nfs_mount failed', v['problems'][0])

    def test_kernel_showmount_recorded(self):
        """The kernel's mountd left out the single host 10.231.0.11 and
        listed the "*" export as (everyone): the directories are what
        counts; exportfs -v has the clients."""
        t = ns.nfs_server_table(RECORDED, DEFAULT, False, '10.231.0.11', [])
        nfsls = [{'dir': e['dir'], 'version': '3', 'ok': True, 'error': ''} for e in t]
        v = ns.nfs_server_verify(verify_doc(exportfs=rec('exportfs-v.txt'),
                                            showmount={'ok': True, 'error': '', 'text': rec('showmount-kernel.txt')},
                                            rpcinfo=rec('rpcinfo-kernel-mountd.txt'), nfsls=nfsls),
                                 t, settings(versions=[3], ports={'mountd': 20048}))
        self.assertEqual(v['problems'], [])
        self.assertIn('in the kernel export table (exportfs -v), listed by its MOUNT service (showmount -e)', v['summary'])

    def test_kernel_showmount_lacks_a_directory(self):
        t = table([{'dir': '/volume/nfs/pv2', 'to': '10.231.0.0/24'}])
        v = ns.nfs_server_verify(verify_doc(exportfs='/volume/nfs/pv2\n\t\t10.231.0.0/24(rw,mountpoint=/volume)\n\t\t',
                                            showmount={'ok': True, 'error': '', 'text': rec('showmount-kernel.txt')},
                                            nfsls=[]), t, settings(versions=[]))
        self.assertIn('does not list /volume/nfs/pv2 in showmount -e 10.231.0.11', ' '.join(v['problems']))

    def test_showmount_lacks_a_client(self):
        t = table([{'dir': '/volume/nfs/pv1', 'to': '10.9.0.0/24'}])
        v = ns.nfs_server_verify(verify_doc(showmount={'ok': True, 'error': '', 'text': rec('showmount-ganesha.txt')},
                                            nfsls=[]), t, settings(impl='ganesha', versions=[]))
        self.assertIn('does not list /volume/nfs/pv1 for 10.9.0.0/24 in showmount -e 10.231.0.11', v['problems'][0])


class State(unittest.TestCase):
    def state(self, **kw):
        doc = {'os': {'id': 'debian', 'version_id': '12'}, 'pending': None, 'no_nfsd': None,
               'units': {'nfs-server.service': {'load': 'loaded', 'active': 'inactive', 'file': 'disabled'},
                         'nfs-ganesha.service': {'load': 'loaded', 'active': 'active', 'file': 'enabled'}},
               'sha1sum': 'aaa  /etc/ganesha/ganesha.conf', 'stat': 'root root 644 /etc/ganesha/ganesha.conf',
               'dirs': ' /etc/ganesha /etc/systemd/system',
               'defaults': '', 'pkgs': {'nfs-ganesha': 'installed'}}
        doc.update(kw)
        return json.dumps(doc)

    def s(self, **kw):
        s = {'impl': 'ganesha', 'unit': 'nfs-ganesha.service', 'other_units': ['nfs-server.service', 'rpc-statd.service'],
             'packages': ['nfs-ganesha'], 'files': {'/etc/ganesha/ganesha.conf': 'aaa'}, 'defaults_want': ''}
        s.update(kw)
        return s

    def test_converged(self):
        p = ns.nfs_server_state(self.state(), self.s())
        self.assertFalse(p['todo'])

    def test_pending_mark(self):
        p = ns.nfs_server_state(self.state(pending='written by heatsible, not applied yet\n'), self.s())
        self.assertTrue(p['pending'])
        self.assertTrue(p['todo'])

    def test_stale_file_and_mode(self):
        p = ns.nfs_server_state(self.state(), self.s(files={'/etc/ganesha/ganesha.conf': 'bbb', '/etc/x.conf': 'c',
                                                           '/etc/nfs.conf.d/zz-heatsible.conf': 'd'}))
        self.assertEqual(p['stale'], ['/etc/ganesha/ganesha.conf', '/etc/nfs.conf.d/zz-heatsible.conf', '/etc/x.conf'])
        self.assertEqual(p['nodir'], ['/etc/nfs.conf.d/zz-heatsible.conf', '/etc/x.conf'])
        p = ns.nfs_server_state(self.state(stat='root root 600 /etc/ganesha/ganesha.conf'), self.s())
        self.assertEqual(p['stale'], ['/etc/ganesha/ganesha.conf'])

    def test_kernel_without_nfsd(self):
        units = {'nfs-server.service': {'load': 'loaded', 'active': 'inactive', 'file': 'disabled'},
                 'nfs-ganesha.service': {'load': 'loaded', 'active': 'active', 'file': 'enabled'},
                 'rpc-statd.service': {'load': 'loaded', 'active': 'failed', 'file': 'static'},
                 'nfs-ganesha-lock.service': {'load': 'loaded', 'active': 'active', 'file': 'enabled'}}
        p = ns.nfs_server_state(self.state(no_nfsd='test bed\n', units=units), self.s(
            impl='kernel', unit='nfs-server.service', other_units=['nfs-ganesha.service', 'nfs-ganesha-lock.service']))
        self.assertFalse(p['serve'])
        self.assertEqual(p['other_busy'], ['nfs-ganesha.service', 'nfs-ganesha-lock.service'])
        self.assertTrue(p['todo'], 'the kernel server is not started there, but ganesha must be stopped')

    def test_legacy(self):
        self.assertTrue(ns.nfs_server_legacy_nfs_conf({'id': 'ubuntu', 'version_id': '20.04'}))
        self.assertFalse(ns.nfs_server_legacy_nfs_conf({'id': 'ubuntu', 'version_id': '22.04'}))
        self.assertFalse(ns.nfs_server_legacy_nfs_conf({'id': 'ubuntu', 'version_id': '24.04'}))
        self.assertFalse(ns.nfs_server_legacy_nfs_conf({'id': 'debian', 'version_id': '12'}))
        # bullseye's nfs-utils is 1.3.4 too (no nfs.conf)
        self.assertTrue(ns.nfs_server_legacy_nfs_conf({'id': 'debian', 'version_id': '11'}))

    def test_obsolete_ports_file(self):
        old = '/etc/nfs.conf.d/heatsible.conf'
        st = self.state(sha1sum='aaa  /etc/ganesha/ganesha.conf\nbbb  ' + old,
                        stat='root root 644 /etc/ganesha/ganesha.conf\nroot root 644 ' + old)
        p = ns.nfs_server_state(st, self.s(obsolete=[old]))
        self.assertEqual(p['obsolete'], [old])
        self.assertTrue(p['todo'], 'the old heatsible.conf must be removed')
        p = ns.nfs_server_state(self.state(), self.s(obsolete=[old]))
        self.assertEqual(p['obsolete'], [])
        self.assertFalse(p['todo'], 'converged: no old file, nothing to do')


    def test_defaults_lines(self):
        want = 'RPCMOUNTDOPTS="--manage-gids --port 20048"'
        p = ns.nfs_server_state(self.state(defaults='RPCMOUNTDOPTS="--manage-gids"\nSTATDOPTS='), self.s(defaults_want=want))
        self.assertTrue(p['defaults_stale'])
        p = ns.nfs_server_state(self.state(defaults=want + '\nSTATDOPTS='), self.s(defaults_want=want))
        self.assertFalse(p['defaults_stale'])


class TestNFSConfOrder(unittest.TestCase):
    PORTS = {'mountd': 20048, 'statd': 32765, 'statd_outgoing': 32766, 'lockd': 32768}

    def test_versionsort(self):
        names = ['zzz-site.conf', 'zz-heatsible.conf', 'local.conf', 'heatsible.conf', 'a10.conf', 'a9.conf', 'Z.conf']
        import functools
        got = sorted(names, key=functools.cmp_to_key(ns._strverscmp))
        self.assertEqual(got, ['Z.conf', 'a9.conf', 'a10.conf', 'heatsible.conf', 'local.conf', 'zz-heatsible.conf',
                               'zzz-site.conf'])

    def test_local_conf_loses(self):
        # what nfsconvert writes from RPCMOUNTDOPTS/STATDOPTS: sorts before zz-heatsible.conf
        conf = {'local.conf': '[mountd]\nport = 40001\n[statd]\nport = 40002\n',
                'zz-heatsible.conf': ns.nfs_server_nfs_conf(self.PORTS)}
        keys = ns.nfs_server_pinned_keys(self.PORTS, 'kernel')
        self.assertEqual(ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys), [])

    def test_later_file_overrides(self):
        conf = {'zz-heatsible.conf': ns.nfs_server_nfs_conf(self.PORTS),
                'zzz-site.conf': '# site\n[Statd]\n Port = "40002"  # quoted\noutgoing-port = 32766\n'
                                 '[mountd "x"]\nport = 1\n[lockd]\nport = 32768 ; same\n'}
        keys = ns.nfs_server_pinned_keys(self.PORTS, 'kernel')
        o = ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys)
        self.assertEqual(o, [{'file': 'zzz-site.conf', 'section': 'statd', 'tag': 'port', 'value': '40002',
                              'want': '32765'}])
        msg = ns.nfs_server_overrides_msg(o, 'storage-server', 'zz-heatsible.conf')
        self.assertTrue(msg.startswith('storage-server: /etc/nfs.conf.d/zzz-site.conf sets [statd] port = 40002'
                                       ' (heatsible pins 32765), which nfs-utils reads after'
                                       ' /etc/nfs.conf.d/zz-heatsible.conf'), msg)
        self.assertIn('or rename the file so that it sorts before zz-heatsible.conf, then re-run.', msg)

    def test_ganesha_ignores_mountd(self):
        conf = {'zzz-site.conf': '[mountd]\nport = 40001\n'}
        keys = ns.nfs_server_pinned_keys(self.PORTS, 'ganesha')
        self.assertEqual(ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys), [])
        keys = ns.nfs_server_pinned_keys(self.PORTS, 'kernel')
        self.assertEqual(len(ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys)), 1)


if __name__ == '__main__':
    unittest.main()
