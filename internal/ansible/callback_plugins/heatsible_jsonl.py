# heatsible_jsonl: heatsible's stdout callback. heatsible stages it into
# every run bundle (callback_plugins/) and runs every ansible-playbook with
# it, its own plays and kubespray's (internal/ansible/events.go reads it).
#
# One JSON object per line and event, in the wire format of
# ansible.posix.jsonl (which heatsible used before): "_event" (the callback
# method), "play" {name, id}, "task" {name, id}, "hosts" {host: result},
# "stats" {host: summary}; compact, sorted keys, ASCII-escaped, as
# json.dumps with Ansible's encoder writes it. It is heatsible's own so that
# nothing but ansible-core is needed for it: ansible.posix has jsonl only
# since 1.5.2 (the `ansible` package 7.5, 2023), so the Ansible of
# kubespray 2.16-2.22 (Ansible 2.9 to 5, ansible-core 2.12) has none, and a
# bare `pip install ansible-core` has no ansible.posix at all. It is
# written for ansible 2.9 to ansible-core 2.19 (the matrix of
# testbed/ansible/venvs.sh runs it under each).
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = '''
    name: heatsible_jsonl
    type: stdout
    short_description: heatsible's progress and results, one JSON object per line
    description:
        - Every play start, task start, host result and the final stats as one line of JSON.
    requirements:
        - set as the stdout callback (heatsible does)
'''

import datetime
import json

try:
    from ansible.parsing.ajson import AnsibleJSONEncoder
except ImportError:  # pragma: no cover - where ansible.parsing.ajson is gone
    from ansible.module_utils.common.json import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase

# Strategies that start a task on every host at once (task start events);
# under the others each host starts on its own (runner start events).
LOCKSTEP = frozenset(('linear', 'debug'))


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def _text(v):
    return u'%s' % (v,)


def _part(obj, new, old):
    """obj.new where the callback API has it (ansible-core 2.19), else obj.old."""
    v = getattr(type(obj), new, None)
    if isinstance(v, property):
        return getattr(obj, new)
    return getattr(obj, old)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'heatsible_jsonl'

    def __init__(self, display=None):
        super(CallbackModule, self).__init__(display)
        self._lockstep = True

    def _emit(self, event, body):
        body['_event'] = event
        body['_timestamp'] = _now()
        self._display.display(json.dumps(body, cls=AnsibleJSONEncoder, sort_keys=True, separators=(',', ':')))

    @staticmethod
    def _task(task):
        return {'task': {'name': task.get_name(), 'id': _text(task._uuid)}, 'hosts': {}}

    def v2_playbook_on_play_start(self, play):
        self._lockstep = getattr(play, 'strategy', 'linear') in LOCKSTEP
        self._emit('v2_playbook_on_play_start', {'play': {'name': play.get_name(), 'id': _text(play._uuid)}})

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._lockstep:
            self._emit('v2_playbook_on_task_start', self._task(task))

    def v2_playbook_on_handler_task_start(self, task):
        if self._lockstep:
            self._emit('v2_playbook_on_handler_task_start', self._task(task))

    def v2_runner_on_start(self, host, task):
        if not self._lockstep:
            self._emit('v2_runner_on_start', self._task(task))

    def _result(self, event, result, flag=None):
        task = _part(result, 'task', '_task')
        host = _part(result, 'host', '_host')
        res = dict(_part(result, 'result', '_result'))
        if flag:
            res[flag] = True
        res['action'] = task.action
        body = self._task(task)
        body['hosts'][host.get_name()] = res
        self._emit(event, body)

    def v2_runner_on_ok(self, result, **kwargs):
        self._result('v2_runner_on_ok', result)

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._result('v2_runner_on_failed', result, 'failed')

    def v2_runner_on_skipped(self, result, **kwargs):
        self._result('v2_runner_on_skipped', result, 'skipped')

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._result('v2_runner_on_unreachable', result)

    def v2_playbook_on_stats(self, stats):
        summary = dict((h, stats.summarize(h)) for h in sorted(stats.processed.keys()))
        self._emit('v2_playbook_on_stats', {'stats': summary})
