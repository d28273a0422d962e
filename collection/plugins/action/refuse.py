# heatsible.nfv.refuse: refuse for safety (exit code 6 of heatsible), on
# purpose.
#
# It runs on the controller, like ansible.builtin.fail: no connection, no
# module sent to the host. plugins/modules/refuse.py documents it
# (ansible-doc, ansible-lint's argument checks).
#
# The marker is the result key heatsible_refused: true. heatsible maps a
# failed task that carries it to exit code 6 ("refused: the cluster is not
# in a state where this is safe; nothing was changed"), whatever the task is
# called; any other failed task is exit code 4.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    ''' Fail with a message, marked as a refusal for safety '''

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('msg',))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # tmp no longer has any effect

        msg = (self._task.args or {}).get('msg')
        if not isinstance(msg, str) or not msg.strip():
            # Without a reason it is a broken task, not a refusal.
            raise AnsibleActionFail('heatsible.nfv.refuse needs msg: say what is unsafe and what to do about it')

        result['failed'] = True
        result['msg'] = msg
        result['heatsible_refused'] = True
        return result
