#!/usr/bin/python
# heatsible.nfv.controller_file: documentation and argument spec. The work
# is done on the controller by plugins/action/controller_file.py;
# this module only exists for ansible-doc and ansible-lint's argument
# checks, and refuses to run on a host.
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
---
module: controller_file
short_description: Write a secret to a 0600 file on the controller
description:
  - Writes O(content) to O(dest) on the controller (the machine that runs
    ansible-playbook), mode 0600, through a new file in the same directory
    renamed over O(dest). Nothing runs on the task's host.
  - Cheaper than M(ansible.builtin.copy) delegated to localhost, which runs
    a module process of its own on the controller.
  - Always reports C(changed=false) (the file belongs to the controller's
    run, not to a host). In check mode it writes nothing.
  - Put C(no_log) on the task: the content is a secret.
options:
  content:
    description: What to write.
    type: str
    required: true
  dest:
    description: Absolute path of the file on the controller.
    type: str
    required: true
author: heatsible
'''

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(content=dict(type='str', required=True, no_log=True),
                                              dest=dict(type='str', required=True)),
                           supports_check_mode=True)
    module.fail_json(msg='heatsible.nfv.controller_file runs on the controller only (its action plugin is missing)')


if __name__ == '__main__':
    main()
