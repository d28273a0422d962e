# heatsible.nfv.controller_file: write a secret to a file on the controller,
# mode 0600, in the controller's own worker process.
#
# Why not ansible.builtin.copy delegated to localhost: that sends the copy
# module to the controller as to any host, a Python process of its own
# and a stat round trip before it (0.26-0.63 s of every run on the test bed,
# measured; docs/performance.md). This writes the file directly: nothing
# runs on the task's host, nothing is sent anywhere. plugins/modules/ documents it.
#
# The file is written to a new 0600 file in the same directory and renamed
# over dest, so that a reader never sees part of it and an existing file's
# mode, owner or symlink is never reused. Reports changed=false: the file
# belongs to the controller's run, not to any host. Never put the content
# in the result (the task is no_log as well).
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import tempfile

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    ''' Write content to a 0600 file on the controller '''

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('content', 'dest'))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect

        args = self._task.args or {}
        content, dest = args.get('content'), args.get('dest')
        if isinstance(content, (dict, list)):
            # Ansible's templating turns a JSON string into the object it
            # holds; write it back as JSON (as ansible.builtin.copy does).
            content = json.dumps(content)
        if not isinstance(content, str) or not isinstance(dest, str) or not os.path.isabs(dest):
            raise AnsibleActionFail('heatsible.nfv.controller_file needs content (a string) and dest (an absolute path)')
        result['changed'] = False
        result['dest'] = dest
        if self._task.check_mode:
            result['skipped'] = True
            result['msg'] = 'check mode: not written'
            return result

        tmp_path = None
        try:
            fd, tmp_path = tempfile.mkstemp(dir=os.path.dirname(dest), prefix='.' + os.path.basename(dest) + '.')
            with os.fdopen(fd, 'wb') as f:
                f.write(to_bytes(content, errors='surrogate_or_strict'))
            os.chmod(tmp_path, 0o600)
            os.rename(tmp_path, dest)
        except OSError as e:
            try:
                if tmp_path is not None:
                    os.unlink(tmp_path)
            except OSError:
                pass
            # The error names the path and the reason, never the content.
            raise AnsibleActionFail('could not write %s on the controller: %s' % (dest, e.strerror or e))
        return result
