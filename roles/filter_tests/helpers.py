"""Load a role's Python file (filter plugin or host-side script) by path."""

import importlib.util
import os

ROLES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(role, rel):
    path = os.path.join(ROLES, role, rel)
    name = "%s_%s" % (role, os.path.splitext(os.path.basename(rel))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
