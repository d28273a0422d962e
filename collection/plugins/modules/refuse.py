#!/usr/bin/python
# heatsible.nfv.refuse: documentation and argument spec. The work is done
# on the controller by the action plugin of the same name
# (plugins/action/refuse.py, as for ansible.builtin.fail); this module only
# runs, on the host, with the same result, where that action plugin is
# missing.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: refuse
short_description: Refuse for safety, with a message (heatsible exit code 6)
description:
  - Fails the task, like M(ansible.builtin.fail), and marks its result with
    C(heatsible_refused=true). heatsible reports a failed task that carries
    this marker as a refusal (exit code 6, "the cluster is not in a state
    where this is safe; nothing was changed"), whatever the task is called.
    Any other failed task is exit code 4.
  - Use it, with C(when), for every check that guards data (a device that
    holds a foreign signature, a Bound PersistentVolume, an export that would
    be served from the root disk), never for a broken host or a bad
    parameter.
  - Do not set C(no_log) on such a task (it would hide the marker and the
    message); do not C(ignore_errors) or rescue it.
  - Runs on the controller (action plugin); no connection to the host.
options:
  msg:
    description:
      - What is unsafe, and what an operator must do before re-running.
    type: str
    required: true
author:
  - heatsible
'''

EXAMPLES = r'''
- name: Refuse while a PersistentVolume is Bound
  heatsible.nfv.refuse:
    msg: "{{ pv_bound | join(', ') }} are Bound: delete their claims first"
  when: pv_bound | length > 0
'''

RETURN = r'''
heatsible_refused:
  description: Always true; the marker heatsible looks for.
  returned: always
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(msg=dict(type='str', required=True)), supports_check_mode=True)
    module.fail_json(msg=module.params['msg'], heatsible_refused=True)


if __name__ == '__main__':
    main()
