# -*- coding: utf-8 -*-
"""Tests of plugins/modules/files.py (heatsible.nfv.files), run as Ansible
runs a module (a Python process given its arguments in a JSON file), on a
temporary directory.

    make role-tests
"""

import grp
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, '..', '..', '..', '..', 'plugins', 'modules', 'files.py')
OWNER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


def ansible_python():
    """A Python that can import ansible (the module's AnsibleModule): this
    one, or the one ansible-playbook runs on (Debian's python3 when this is
    another)."""
    candidates = [sys.executable]
    ap = shutil.which('ansible-playbook')
    if ap:
        with open(ap) as f:
            first = f.readline()
        if first.startswith('#!'):
            candidates.append(first[2:].split()[0])
    for py in candidates:
        if subprocess.run([py, '-c', 'import ansible.module_utils.basic'], capture_output=True).returncode == 0:
            return py
    return None


PYTHON = ansible_python()


@unittest.skipIf(PYTHON is None, 'no Python with ansible here (install ansible-core)')
class HeatsibleFilesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def run_module(self, check=False, diff=False, **args):
        args.setdefault('owner', OWNER)
        args.setdefault('group', GROUP)
        args['_ansible_check_mode'] = check
        args['_ansible_diff'] = diff
        path = os.path.join(self.d, 'args.json')
        with open(path, 'w') as f:
            json.dump({'ANSIBLE_MODULE_ARGS': args}, f)
        p = subprocess.run([PYTHON, MODULE, path], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE='1'))
        os.unlink(path)
        return json.loads(p.stdout)

    def p(self, *parts):
        return os.path.join(self.d, *parts)

    def read(self, *parts):
        with open(self.p(*parts)) as f:
            return f.read()

    def mode(self, *parts):
        return os.stat(self.p(*parts)).st_mode & 0o7777

    def test_writes_files_and_their_directories_then_nothing(self):
        files = [{'path': self.p('a.d', 'x.conf'), 'content': 'x\n'},
                 {'path': self.p('b.d', 'c', 'y.conf'), 'content': 'y\n'}]
        r = self.run_module(files=files, diff=True)
        self.assertFalse(r.get('failed'), r)
        self.assertTrue(r['changed'])
        self.assertEqual(r['changed_files'], [f['path'] for f in files])
        self.assertEqual(r['created_dirs'], [self.p('a.d'), self.p('b.d'), self.p('b.d', 'c')])
        self.assertEqual(self.read('a.d', 'x.conf'), 'x\n')
        self.assertEqual(self.read('b.d', 'c', 'y.conf'), 'y\n')
        self.assertEqual(self.mode('a.d', 'x.conf'), 0o644)
        self.assertEqual(self.mode('b.d', 'c'), 0o755)
        self.assertEqual([(x['before'], x['after']) for x in r['diff']], [('', 'x\n'), ('', 'y\n')])
        self.assertEqual(sorted(os.listdir(self.p('a.d'))), ['x.conf'], 'a temporary file was left')
        r = self.run_module(files=files)
        self.assertFalse(r['changed'], r)
        self.assertEqual(r['changed_files'], [])

    def test_rewrites_only_what_differs(self):
        os.mkdir(self.p('d'))
        for name, content in (('same', 's\n'), ('old', 'old\n'), ('mode', 'm\n')):
            with open(self.p('d', name), 'w') as f:
                f.write(content)
            os.chmod(self.p('d', name), 0o644)
        os.chmod(self.p('d', 'mode'), 0o600)
        r = self.run_module(files=[{'path': self.p('d', n), 'content': c} for n, c in
                                   (('same', 's\n'), ('old', 'new\n'), ('mode', 'm\n'))], diff=True)
        self.assertEqual(r['changed_files'], [self.p('d', 'old'), self.p('d', 'mode')])
        self.assertEqual(r['diff'][0]['before'], 'old\n')
        self.assertEqual(self.read('d', 'old'), 'new\n')
        self.assertEqual(self.mode('d', 'mode'), 0o644)
        self.assertEqual(self.read('d', 'mode'), 'm\n')

    def test_check_mode_writes_nothing(self):
        with open(self.p('old'), 'w') as f:
            f.write('old\n')
        r = self.run_module(check=True, diff=True, mark=self.p('state', 'pending'),
                            files=[{'path': self.p('old'), 'content': 'new\n'},
                                   {'path': self.p('new.d', 'f'), 'content': 'f\n'}])
        self.assertTrue(r['changed'])
        self.assertEqual(r['changed_files'], [self.p('old'), self.p('new.d', 'f')])
        self.assertEqual(r['created_dirs'], [self.p('new.d')])
        self.assertEqual(r['diff'][0]['before'], 'old\n')
        self.assertEqual(self.read('old'), 'old\n')
        self.assertFalse(os.path.exists(self.p('new.d')))
        self.assertFalse(os.path.exists(self.p('state')), 'check mode wrote the mark')

    def test_mark_first_and_not_a_change_by_itself(self):
        mark = self.p('state', 'pending')
        r = self.run_module(mark=mark, files=[])
        self.assertFalse(r['changed'], r)
        self.assertTrue(r['mark_written'])
        self.assertEqual(self.read('state', 'pending'), 'written by heatsible, not applied yet\n')
        r = self.run_module(mark=mark, files=[])
        self.assertFalse(r['mark_written'])
        os.unlink(mark)
        # The file cannot be written (its "directory" is a regular file):
        # the mark is on disk all the same, before the module failed.
        with open(self.p('plain'), 'w') as f:
            f.write('')
        r = self.run_module(mark=mark, files=[{'path': self.p('plain', 'f'), 'content': 'f\n'}])
        self.assertTrue(r.get('failed'), r)
        self.assertTrue(os.path.exists(mark), 'the mark was not written before the files')

    def test_a_directory_in_the_way_fails_before_anything_is_written(self):
        os.mkdir(self.p('isdir'))
        r = self.run_module(mark=self.p('pending'), files=[{'path': self.p('f'), 'content': 'f\n'},
                                                           {'path': self.p('isdir'), 'content': 'x\n'}])
        self.assertTrue(r.get('failed'), r)
        self.assertIn('is a directory', r['msg'])
        self.assertFalse(os.path.exists(self.p('f')))
        self.assertFalse(os.path.exists(self.p('pending')))

    def test_a_mark_that_cannot_be_written_fails_alone(self):
        os.mkdir(self.p('markdir'))
        r = self.run_module(mark=self.p('markdir'), files=[{'path': self.p('f'), 'content': 'f\n'}])
        self.assertTrue(r.get('failed'), r)
        self.assertIn('writing the mark %s (before any file)' % self.p('markdir'), r['msg'])
        self.assertFalse(r['changed'], r)
        self.assertEqual(r['changed_files'], [])
        self.assertFalse(os.path.exists(self.p('f')))

    def test_bad_arguments(self):
        r = self.run_module(files=[{'path': 'relative', 'content': 'x'}])
        self.assertTrue(r.get('failed'), r)
        self.assertIn('absolute path', r['msg'])
        r = self.run_module(files=[], mode='rw')
        self.assertTrue(r.get('failed'), r)


if __name__ == '__main__':
    unittest.main()
