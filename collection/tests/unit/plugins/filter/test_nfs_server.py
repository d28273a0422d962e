# -*- coding: utf-8 -*-
"""Unit tests of plugins/filter/nfs_server.py, on outputs of the real tools
recorded on the test bed (recorded/README.md says how), and of the role's
templates.

    make role-tests
"""

import json
import os
import unittest

from ansible_collections.heatsible.nfv.tests.unit.plugins.filter.helpers import ROLES
from ansible_collections.heatsible.nfv.plugins.filter import nfs_server as ns

HERE = os.path.dirname(os.path.abspath(__file__))


def render(template, **variables):
    """A template of the role, rendered as Ansible's template module does
    (trim_blocks, Ansible's match test)."""
    import re
    import jinja2
    with open(os.path.join(ROLES, 'nfs_server', 'templates', template)) as f:
        src = f.read()
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.tests['match'] = lambda value, pattern: re.match(pattern, value) is not None
    return env.from_string(src).render(ansible_managed='Ansible managed', **variables)


def exports_lines(table):
    """The export lines of templates/exports.j2 (no comments)."""
    return [line for line in render('exports.j2', nfs_server_table=table).split('\n') if line and not line.startswith('#')]


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

    def test_export_id_is_the_one_go_checks(self):
        # internal/params TestGaneshaExportID asserts the same numbers
        ids = [t['export_id'] for t in table([{'dir': d, 'to': 'x'} for d in
                                              ('/volume/nfs/pv1', '/volume/nfs/pv103', '/volume/nfs/pv148')])]
        self.assertEqual(ids, [11071, 43213, 43213])


class Exports(unittest.TestCase):
    """/etc/exports: one line per export, each ended by the template
    (templates/exports.j2), whatever blank
    lines the template has or has not."""

    TABLE = [
        {'dir': '/volume/nfs/pv1', 'mount_to': '/volume', 'clients': [
            {'to': '10.231.0.0/24', 'options': ['rw', 'sync']}, {'to': '10.231.0.11', 'options': ['ro']}]},
        {'dir': '/srv/rec', 'mount_to': '', 'clients': [{'to': '*', 'options': ['rw', 'mp=/srv']}]},
    ]
    LINES = ['/volume/nfs/pv1 10.231.0.0/24(rw,sync,mp=/volume) 10.231.0.11(ro,mp=/volume)',
             '/srv/rec *(rw,mp=/srv)']

    def test_lines(self):
        self.assertEqual(exports_lines(self.TABLE), self.LINES)
        self.assertEqual(exports_lines([]), [])

    def test_kernel_options_carry_mp(self):
        t = [{'dir': '/volume/a', 'mount_to': '/volume', 'clients': [
            {'to': 'x', 'options': ['rw']}, {'to': 'y', 'options': ['rw', 'mp=/other']},
            {'to': 'z', 'options': ['rw', 'mountpoint']}]},
            {'dir': '/srv/b', 'mount_to': '', 'clients': [{'to': 'x', 'options': ['rw']}]}]
        self.assertEqual(exports_lines(t), ['/volume/a x(rw,mp=/volume) y(rw,mp=/other) z(rw,mountpoint)', '/srv/b x(rw)'])

    def test_lines_of_the_table(self):
        got = exports_lines(table(RECORDED))
        self.assertEqual(len(got), 3)
        self.assertEqual(got[0], '/volume/nfs/pv1 10.231.0.0/24(%s,mp=/volume) 10.231.0.11(%s,mp=/volume)' % (DEFAULT, DEFAULT))

    def test_template(self):
        out = render('exports.j2', nfs_server_table=self.TABLE)
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
        lines = exports_lines(t)
        self.assertEqual(lines[0], '/volume/nfs/pv1 10.231.0.0/24(rw,sync,no_subtree_check,root_squash,mp=/volume) '
                                   '10.231.0.11(rw,sync,no_subtree_check,root_squash,mp=/volume)')
        # An export that asks for no_root_squash gets it.
        self.assertIn('10.231.0.0/24(rw,sync,no_root_squash,mp=/volume)', lines[1])


class Files(unittest.TestCase):
    """The daemon settings' templates give what earlier versions wrote
    (byte for byte: an upgraded server sees no change)."""

    def test_dropin(self):
        d = render('heatsible-mounts.conf.j2', nfs_server_mount_points=['/volume', '/volume2'])
        self.assertIn('\n[Unit]\nRequiresMountsFor=/volume /volume2\n\n[Service]\n', d)
        self.assertTrue(d.endswith('\nExecStartPre=/bin/mountpoint -q /volume\nExecStartPre=/bin/mountpoint -q /volume2\n'), d)
        self.assertTrue(render('heatsible-mounts.conf.j2', nfs_server_mount_points=[]).endswith('directory on the root disk).\n[Unit]\n'))

    def test_nfs_conf(self):
        c = render('zz-heatsible.conf.j2', **PORT_VARS)
        self.assertIn('\n[mountd]\nport = 20048\n\n', c)
        self.assertIn('\n[statd]\nport = 32765\noutgoing-port = 32766\n\n', c)
        self.assertTrue(c.endswith('\n[lockd]\nport = 32768\nudp-port = 32768\n'), c)


PORT_VARS = {'nfs_server_mountd_port': 20048, 'nfs_server_statd_port': 32765, 'nfs_server_statd_outgoing_port': 32766,
             'nfs_server_lockd_port': 32768}
# vars/main.yml's nfs_server_pinned_keys
PINNED_GANESHA = {'statd port': 32765, 'statd outgoing-port': 32766}
PINNED_KERNEL = dict(PINNED_GANESHA, **{'mountd port': 20048, 'lockd port': 32768, 'lockd udp-port': 32768})


class Parsers(unittest.TestCase):
    def test_exportfs_long_paths_break_the_line(self):
        got = ns.parse_exportfs(rec('exportfs-v.txt'))
        clients = sorted((p, c) for p, c, _opts in got)
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


class TestNFSConfOrder(unittest.TestCase):
    def test_versionsort(self):
        names = ['zzz-site.conf', 'zz-heatsible.conf', 'local.conf', 'heatsible.conf', 'a10.conf', 'a9.conf', 'Z.conf']
        import functools
        got = sorted(names, key=functools.cmp_to_key(ns._strverscmp))
        self.assertEqual(got, ['Z.conf', 'a9.conf', 'a10.conf', 'heatsible.conf', 'local.conf', 'zz-heatsible.conf',
                               'zzz-site.conf'])

    def test_local_conf_loses(self):
        # what nfsconvert writes from RPCMOUNTDOPTS/STATDOPTS: sorts before zz-heatsible.conf
        conf = {'local.conf': '[mountd]\nport = 40001\n[statd]\nport = 40002\n',
                'zz-heatsible.conf': render('zz-heatsible.conf.j2', **PORT_VARS)}
        keys = PINNED_KERNEL
        self.assertEqual(ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys), [])

    def test_later_file_overrides(self):
        conf = {'zz-heatsible.conf': render('zz-heatsible.conf.j2', **PORT_VARS),
                'zzz-site.conf': '# site\n[Statd]\n Port = "40002"  # quoted\noutgoing-port = 32766\n'
                                 '[mountd "x"]\nport = 1\n[lockd]\nport = 32768 ; same\n'}
        keys = PINNED_KERNEL
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
        keys = PINNED_GANESHA
        self.assertEqual(ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys), [])
        keys = PINNED_KERNEL
        self.assertEqual(len(ns.nfs_server_nfs_conf_overrides(conf, 'zz-heatsible.conf', keys)), 1)


if __name__ == '__main__':
    unittest.main()
