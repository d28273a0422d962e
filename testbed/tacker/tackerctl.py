"""Small Tacker API helper for testbed/tacker/tacker.sh (run with the venv's python).

  vim-check      exit 0 iff the bed's OpenStack is Tacker's default VIM and REACHABLE;
                 prints "<name> <id> <status> <auth_url>"
  vim-register   register it through Tacker's API (POST /v1.0/vims), wait for
                 REACHABLE, print one line

Credentials: testbed/run/tacker/env (OS_*), read here, never printed.
"""

import os
import sys
import time

from keystoneauth1 import session
from keystoneauth1.identity import v3
from tackerclient.v1_0 import client as tacker_client

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "..", "run", "tacker")
VIM_NAME = "bed-openstack"


def load_env():
    env = {}
    with open(os.path.join(RUN, "env")) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                env[k] = v
    return env


def client(env):
    auth = v3.Password(auth_url=env["OS_AUTH_URL"], username=env["OS_USERNAME"],
                       password=env["OS_PASSWORD"], project_name=env["OS_PROJECT_NAME"],
                       user_domain_name=env["OS_USER_DOMAIN_NAME"],
                       project_domain_name=env["OS_PROJECT_DOMAIN_NAME"])
    return tacker_client.Client(session=session.Session(auth=auth), region_name="RegionOne")


def find(c):
    for v in c.list_vims()["vims"]:
        if v["name"] == VIM_NAME:
            return v
    return None


def vim_check(c):
    v = find(c)
    if not v:
        return 1
    print(v["name"], v["id"], v["status"], v["auth_url"], "default" if v.get("is_default") else "not-default")
    return 0 if v.get("is_default") and v["status"] in ("ACTIVE", "REACHABLE") else 1


def vim_register(c, env):
    v = find(c)
    if v and (not v.get("is_default") or v["status"] not in ("ACTIVE", "REACHABLE")):
        c.delete_vim(v["id"])
        v = None
    if not v:
        body = {"vim": {
            "name": VIM_NAME,
            "description": "the heatsible test bed's Keystone + Heat (testbed/heat)",
            "type": "openstack",
            # ends with /v3: Tacker releases before the /v3/regions fix made it .../v3/v3/regions
            "auth_url": env["OS_AUTH_URL"],
            "auth_cred": {"username": env["OS_USERNAME"], "password": env["OS_PASSWORD"],
                          "user_domain_name": env["OS_USER_DOMAIN_NAME"], "cert_verify": "False"},
            "vim_project": {"name": env["OS_PROJECT_NAME"],
                            "project_domain_name": env["OS_PROJECT_DOMAIN_NAME"]},
            "is_default": True,
        }}
        v = c.create_vim(body)["vim"]
    deadline = time.time() + 60
    while v["status"] not in ("ACTIVE", "REACHABLE") and time.time() < deadline:
        time.sleep(1)
        v = c.show_vim(v["id"])["vim"]
    print("VIM %s (%s) %s, auth_url %s, default %s" % (v["name"], v["id"], v["status"],
                                                       v["auth_url"], v.get("is_default")))
    return 0 if v["status"] in ("ACTIVE", "REACHABLE") else 1


def main():
    env = load_env()
    c = client(env)
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "vim-check":
        return vim_check(c)
    if cmd == "vim-register":
        return vim_register(c, env)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
