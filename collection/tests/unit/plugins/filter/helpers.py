"""Where the repository's roles are, for the tests that run a role's own
file (a host-side probe script, a template, its defaults) beside the
filter that judges its output. The collection's tree may be reached through
a symlink (ansible_collections/heatsible/nfv -> collection/, as make
role-tests and ansible-test lay it): the real path is searched upwards."""

import os


def _roles():
    d = os.path.dirname(os.path.realpath(__file__))
    while True:
        if os.path.isdir(os.path.join(d, "roles", "nfs_server")) and os.path.isdir(os.path.join(d, "collection")):
            return os.path.join(d, "roles")
        up = os.path.dirname(d)
        if up == d:
            raise RuntimeError("the repository's roles/ is not above %s: run the tests in the repository's tree" % __file__)
        d = up


ROLES = _roles()
