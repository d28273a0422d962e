#!/usr/bin/python
# heatsible.nfv.files: write a few small files whole, in one module run.
# Unit tests: tests/unit/plugins/modules/test_files.py (make role-tests).
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: files
short_description: Write small files whole (atomically), creating their directories, in one module run
description:
  - Writes each file of O(files) with the given content, owner, group and
    mode, only where what is on the host differs: to a temporary file in the
    same directory, flushed to disk, then renamed over the old one (a reader
    or a crash sees the old file or the new one, never half of one).
  - Creates a missing parent directory (and its parents) with O(dir_mode),
    owned by O(owner) and O(group).
  - Does in one round trip what M(ansible.builtin.file) for the directories
    and M(ansible.builtin.copy) for each file (two modules each: stat, then
    copy) do in several.
  - With O(mark), first writes that file (flushed, with its directory) before
    any of O(files) is touched, even when they are all current (later tasks
    may write other files under the same mark): a run that dies while
    writing leaves the mark for the next run to find. The mark is not
    reported as a change (it is bookkeeping, and notifying the handlers of
    O(files) for it would apply what did not change; whoever applies the
    configuration removes it). Not in check mode.
  - Check mode and diff mode supported (one diff per file).
options:
  files:
    description:
      - The files, each C({path, content}). C(path) is absolute and names a
        regular file (or nothing yet); a directory there fails the module
        before anything is written.
    type: list
    elements: dict
    required: true
  owner:
    description: Owner of the files and of the directories created.
    type: str
    default: root
  group:
    description: Group of the files and of the directories created.
    type: str
    default: root
  mode:
    description: Mode of the files, octal string.
    type: str
    default: '0644'
  dir_mode:
    description: Mode of the directories created, octal string.
    type: str
    default: '0755'
  mark:
    description:
      - A file written (with O(mark_content)) before any of O(files).
    type: path
  mark_content:
    description: Content of O(mark).
    type: str
    default: "written by heatsible, not applied yet\n"
author:
  - heatsible
'''

EXAMPLES = r'''
- name: Write the unit drop-ins, after the mark of a configuration not yet applied
  heatsible.nfv.files:
    mark: /var/lib/heatsible/nfs_server.pending
    files:
      - {path: /etc/systemd/system/nfs-server.service.d/heatsible-mounts.conf, content: "[Unit]\n"}
  notify: Apply the NFS daemon settings
'''

RETURN = r'''
changed_files:
  description: The files written, or whose owner, group or mode was set (in check mode, that would be).
  returned: always
  type: list
  elements: str
created_dirs:
  description: The directories created (in check mode, that would be).
  returned: always
  type: list
  elements: str
mark_written:
  description: Whether O(mark) was written (false in check mode, or when it had the content already).
  returned: always
  type: bool
'''

import grp
import os
import pwd
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule


def _read(path):
    """(bytes, stat) of a regular file, (None, None) if nothing is there."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None  # (a file where a directory should be: creating the directory fails)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError('%s is a directory' % path)
    if not stat.S_ISREG(st.st_mode):
        return None, st  # a symlink or a special file: replaced by the rename
    with open(path, 'rb') as f:
        return f.read(), st


def _missing_dirs(path):
    """The directories to create for path, outermost first."""
    out, d = [], os.path.dirname(path)
    while d and d != '/' and not os.path.isdir(d):
        out.insert(0, d)
        d = os.path.dirname(d)
    return out


def _fsync_dir(d):
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path, data, uid, gid, mode):
    """data into path: a temporary file beside it, flushed, renamed over it."""
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=d)
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
            f.flush()
            os.fchown(f.fileno(), uid, gid)
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(d)


def _mkdirs(dirs, uid, gid, mode):
    for d in dirs:
        if not os.path.isdir(d):
            os.mkdir(d)
            os.chown(d, uid, gid)
            os.chmod(d, mode)
            _fsync_dir(os.path.dirname(d))


def plan(files, uid, gid, mode):
    """What writing files would do: [{path, data, before (bytes|None),
    content (bool: the content differs), attrs (bool: only owner/group/mode
    differ), dirs}] for the files that differ."""
    out = []
    for f in files:
        path, data = f['path'], f['content'].encode('utf-8')
        before, st = _read(path)
        content = before != data
        attrs = not content and (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) != (uid, gid, mode)
        if content or attrs:
            out.append({'path': path, 'data': data, 'before': before, 'content': content, 'attrs': attrs,
                        'dirs': _missing_dirs(path)})
    return out


def apply(todo, uid, gid, mode, dir_mode):
    """Carry out plan()'s list."""
    for t in todo:
        _mkdirs(t['dirs'], uid, gid, dir_mode)
        if t['content']:
            _write(t['path'], t['data'], uid, gid, mode)
        else:
            os.chown(t['path'], uid, gid)
            os.chmod(t['path'], mode)


def write_mark(path, content, uid, gid, dir_mode):
    """The mark, flushed to disk with its directory before anything else is
    written. Returns whether it was written (False: it had the content)."""
    data = content.encode('utf-8')
    before, _ = _read(path)
    if before == data:
        return False
    _mkdirs(_missing_dirs(path), uid, gid, dir_mode)
    _write(path, data, uid, gid, 0o644)
    return True


def _text(b):
    return b.decode('utf-8', 'replace') if b is not None else ''


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True),
            owner=dict(type='str', default='root'),
            group=dict(type='str', default='root'),
            mode=dict(type='str', default='0644'),
            dir_mode=dict(type='str', default='0755'),
            mark=dict(type='path'),
            mark_content=dict(type='str', default='written by heatsible, not applied yet\n'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        uid, gid = pwd.getpwnam(p['owner']).pw_uid, grp.getgrnam(p['group']).gr_gid
        mode, dir_mode = int(p['mode'], 8), int(p['dir_mode'], 8)
    except (KeyError, ValueError) as e:
        module.fail_json(msg='owner %r, group %r, mode %r, dir_mode %r: %s' % (
            p['owner'], p['group'], p['mode'], p['dir_mode'], e))
    files = []
    for f in p['files']:
        path, content = f.get('path'), f.get('content')
        if not isinstance(path, str) or not os.path.isabs(path) or not isinstance(content, str):
            module.fail_json(msg='each entry of files needs an absolute path and a content (string): %r' % (f,))
        files.append({'path': os.path.normpath(path), 'content': content})
    try:
        todo = plan(files, uid, gid, mode)
    except OSError as e:
        module.fail_json(msg='nothing written: %s' % e)
    dirs = sorted({d for t in todo for d in t['dirs']})
    result = dict(changed=bool(todo), changed_files=[t['path'] for t in todo], created_dirs=dirs,
                  mark_written=False)
    if module._diff:
        result['diff'] = [{'before_header': t['path'], 'after_header': t['path'],
                           'before': _text(t['before']), 'after': _text(t['data'])}
                          if t['content'] else
                          {'before_header': t['path'], 'after_header': t['path'],
                           'before': 'owner, group, mode differ\n', 'after': '%s %s %04o\n' % (p['owner'], p['group'], mode)}
                          for t in todo]
    if module.check_mode:
        module.exit_json(**result)
    if p['mark']:
        try:
            result['mark_written'] = write_mark(p['mark'], p['mark_content'], uid, gid, dir_mode)
        except OSError as e:
            # nothing else written: the files stay as they were
            result.update(changed=False, changed_files=[], created_dirs=[])
            module.fail_json(msg='writing the mark %s (before any file): %s' % (p['mark'], e), **result)
    try:
        apply(todo, uid, gid, mode, dir_mode)
    except OSError as e:
        module.fail_json(msg='writing %s: %s' % (', '.join(result['changed_files']), e), **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
