"""Create and delete the bed's Tacker-shaped Heat stack (called by heat.sh).

    stackctl.py create NAME WORKERS VOLUMES [--pools FILE] [--replace]
                       [--networks MASTER,WORKER,STORAGE] [--no-state]
    stackctl.py delete NAME

Credentials come from the OS_* variables of testbed/run/heat/env; state goes
to $HEAT_RUN. `create` waits (bounded) for CREATE_COMPLETE and writes
$HEAT_RUN/stack.json (unless --no-state) with the stack id, the node addresses and every volume's
id and device, which the bed needs for its by-id symlinks.
"""
import argparse
import json
import os
import shutil
import sys
import time

from keystoneauth1 import exceptions as ksexc
from keystoneauth1 import session
from keystoneauth1.identity import v3

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.environ["HEAT_RUN"]
CREATE_TIMEOUT = int(os.environ.get("HEAT_CREATE_TIMEOUT", "600"))
DELETE_TIMEOUT = int(os.environ.get("HEAT_DELETE_TIMEOUT", "300"))
DEVICES = ["vdb", "vdc", "vdd"]


def log(msg):
    print("[stackctl %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr)


def die(msg):
    log("error: " + msg)
    sys.exit(1)


class Heat(object):
    def __init__(self):
        e = os.environ
        auth = v3.Password(auth_url=e["OS_AUTH_URL"], username=e["OS_USERNAME"],
                           password=e["OS_PASSWORD"], project_name=e["OS_PROJECT_NAME"],
                           user_domain_name=e["OS_USER_DOMAIN_NAME"],
                           project_domain_name=e["OS_PROJECT_DOMAIN_NAME"])
        self.s = session.Session(auth=auth)
        self.ep = {"service_type": "orchestration", "interface": "public",
                   "region_name": e.get("OS_REGION_NAME", "RegionOne")}

    def req(self, method, path, **kw):
        kw.setdefault("raise_exc", False)
        return self.s.request(path, method, endpoint_filter=self.ep, **kw)

    def stack(self, ident):
        """GET /stacks/<name or id> (following the 302); None on 404."""
        r = self.req("GET", "/stacks/" + ident, redirect=True)
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            die("GET /stacks/%s: HTTP %d %s" % (ident, r.status_code, r.text[:300]))
        return r.json()["stack"]


def templates(workers, volumes):
    cap = max(16, workers)
    top = {
        "heat_template_version": "2013-05-23",
        "description": "heatsible test bed: Tacker-shaped Kubernetes VNF "
                       "(k8s MgmtDriver sample + storage server)",
        "parameters": {"nfv": {"type": "json"}},
        "resources": {
            "master_instance": {
                "type": "OS::Heat::AutoScalingGroup",
                "properties": {
                    "min_size": 1, "max_size": 3, "desired_capacity": 1,
                    "resource": {"type": "nested_master.yaml", "properties": {
                        "flavor": {"get_param": ["nfv", "VDU", "masterNode", "flavor"]},
                        "image": {"get_param": ["nfv", "VDU", "masterNode", "image"]},
                        "net1": {"get_param": ["nfv", "CP", "masterNode_CP1", "network"]}}}}},
            "worker_instance": {
                "type": "OS::Heat::AutoScalingGroup",
                "properties": {
                    "min_size": 0, "max_size": cap, "desired_capacity": workers,
                    "resource": {"type": "nested_worker.yaml", "properties": {
                        "flavor": {"get_param": ["nfv", "VDU", "workerNode", "flavor"]},
                        "image": {"get_param": ["nfv", "VDU", "workerNode", "image"]},
                        "net1": {"get_param": ["nfv", "CP", "workerNode_CP2", "network"]}}}}},
            "storage_server_CP": {
                "type": "OS::Neutron::Port",
                "properties": {"network": {"get_param": ["nfv", "CP", "storage_server_CP", "network"]}}},
            "storage_server": {
                "type": "OS::Nova::Server",
                "properties": {
                    "flavor": {"get_param": ["nfv", "VDU", "storage_server", "flavor"]},
                    "name": "storage-server",
                    "image": {"get_param": ["nfv", "VDU", "storage_server", "image"]},
                    "block_device_mapping_v2": [],
                    "networks": [{"port": {"get_resource": "storage_server_CP"}}]}},
        },
        # Heat's own get_attr of a volume's attachments: a string (Python
        # repr), as on a real cloud; recorded by the Go tests as a fixture.
        "outputs": {"storage_server_volume_attachments": {
            "value": {"get_attr": ["storage_server_volume", "attachments"]}}},
    }
    for grp in ("master_instance", "worker_instance"):
        for name, adj in (("scale_out", 1), ("scale_in", -1)):
            top["resources"]["%s_%s" % (grp, name)] = {
                "type": "OS::Heat::ScalingPolicy",
                "properties": {"scaling_adjustment": adj,
                               "auto_scaling_group_id": {"get_resource": grp},
                               "adjustment_type": "change_in_capacity"}}
    vols = []
    for i in range(volumes):
        res = "storage_server_volume" + ("" if i == 0 else str(i + 1))
        top["resources"][res] = {"type": "OS::Cinder::Volume",
                                 "properties": {"name": res, "size": 5}}
        top["resources"]["storage_server"]["properties"]["block_device_mapping_v2"].append(
            {"device_name": DEVICES[i], "volume_id": {"get_resource": res}, "boot_index": -1})
        vols.append((res, "/dev/" + DEVICES[i]))
    with open(os.path.join(HERE, "templates", "nested_master.yaml")) as f:
        master = f.read()
    with open(os.path.join(HERE, "templates", "nested_worker.yaml")) as f:
        worker = f.read()
    return top, {"nested_master.yaml": master, "nested_worker.yaml": worker}, vols


def params(networks):
    m, w, s = networks
    p = json.loads(json.dumps(PARAMS))
    p["nfv"]["CP"]["masterNode_CP1"]["network"] = m
    p["nfv"]["CP"]["workerNode_CP2"]["network"] = w
    p["nfv"]["CP"]["storage_server_CP"]["network"] = s
    return p


PARAMS = {"nfv": {
    "VDU": {
        "masterNode": {"flavor": "m1.medium", "image": "ubuntu-22.04-server-cloudimg-amd64"},
        "workerNode": {"flavor": "m1.medium", "image": "ubuntu-22.04-server-cloudimg-amd64"},
        "storage_server": {"flavor": "m1.medium", "image": "ubuntu-22.04-server-cloudimg-amd64"}},
    "CP": {
        "masterNode_CP1": {"network": "net_master"},
        "workerNode_CP2": {"network": "net_worker"},
        "storage_server_CP": {"network": "net_storage"}}}}


def wait_gone(h, name, timeout):
    """Wait until GET /stacks/<name> is 404 (DELETE_COMPLETE comes a moment
    before the name is released; a create in between gets 409 StackExists)."""
    end = time.time() + timeout
    while time.time() < end:
        st = h.stack(name)
        if st is None:
            return
        if st["stack_status"] == "DELETE_FAILED":
            die("stack %s: DELETE_FAILED: %s" % (name, st["stack_status_reason"]))
        time.sleep(0.25)
    die("stack %s still exists after %d s" % (name, timeout))


def delete(h, name):
    st = h.stack(name)
    if st is None:
        log("stack %s does not exist" % name)
        return
    t0 = time.time()
    r = h.req("DELETE", "/stacks/%s/%s" % (st["stack_name"], st["id"]))
    if r.status_code not in (202, 204, 404):
        die("DELETE stack %s: HTTP %d %s" % (name, r.status_code, r.text[:300]))
    wait_gone(h, name, DELETE_TIMEOUT)
    sj = os.path.join(RUN, "stack.json")
    try:
        with open(sj) as f:
            if json.load(f).get("id") == st["id"]:
                os.remove(sj)
    except (OSError, ValueError):
        pass
    log("stack %s deleted in %.1fs" % (name, time.time() - t0))


def create(h, a):
    if not 0 <= a.workers <= 16:
        die("WORKERS must be 0..16, got %d" % a.workers)
    if len(a.networks) != 3:
        die("--networks wants MASTER,WORKER,STORAGE")
    if not 1 <= a.volumes <= 3:
        die("VOLUMES must be 1..3, got %d" % a.volumes)
    if a.pools:
        try:
            with open(a.pools) as f:
                p = json.load(f)
            assert isinstance(p.get("networks"), dict)
        except Exception as e:  # noqa
            die("--pools %s: not a pools file (%s)" % (a.pools, e))
        shutil.copyfile(a.pools, os.path.join(RUN, "pools.json.tmp"))
        os.replace(os.path.join(RUN, "pools.json.tmp"), os.path.join(RUN, "pools.json"))
    existing = h.stack(a.name)
    if existing is not None:
        if not a.replace and existing["stack_status"] not in ("DELETE_COMPLETE", "DELETE_IN_PROGRESS"):
            die("stack %s exists (%s); use stack-delete or --replace" % (a.name, existing["stack_status"]))
        delete(h, a.name)
    top, files, vols = templates(a.workers, a.volumes)
    body = {"stack_name": a.name, "template": top, "files": files, "parameters": params(a.networks),
            "disable_rollback": True, "timeout_mins": max(1, CREATE_TIMEOUT // 60)}
    t0 = time.time()
    end = t0 + CREATE_TIMEOUT
    while True:
        r = h.req("POST", "/stacks", json=body)
        if r.status_code == 201:
            break
        if r.status_code == 409 and time.time() < end:
            # name not released yet after a delete: wait until it 404s
            log("POST: 409 (%s); waiting for the name to be released" % r.text[:120])
            wait_gone(h, a.name, DELETE_TIMEOUT)
            continue
        die("POST /stacks: HTTP %d %s" % (r.status_code, r.text[:500]))
    sid = r.json()["stack"]["id"]
    st = None
    while time.time() < end:
        st = h.stack("%s/%s" % (a.name, sid))
        if st and not st["stack_status"].endswith("IN_PROGRESS"):
            break
        time.sleep(0.25)
    took = time.time() - t0
    if not st or st["stack_status"] != "CREATE_COMPLETE":
        r = h.req("GET", "/stacks/%s/%s/resources?nested_depth=2" % (a.name, sid))
        bad = [x for x in r.json().get("resources", [])
               if not x["resource_status"].endswith("COMPLETE")] if r.status_code == 200 else []
        for x in bad:
            log("  %s %s: %s" % (x["resource_name"], x["resource_status"], x["resource_status_reason"]))
        die("stack %s/%s: %s after %.0fs: %s" % (a.name, sid, st and st["stack_status"], took,
                                                 st and st["stack_status_reason"]))
    log("stack %s/%s CREATE_COMPLETE in %.1fs" % (a.name, sid, took))

    # Read back what the bed needs (one listing with attributes inline).
    r = h.req("GET", "/stacks/%s/%s/resources?nested_depth=2&with_detail=true" % (a.name, sid))
    if r.status_code != 200:
        die("listing resources: HTTP %d" % r.status_code)
    res = r.json()["resources"]
    out = {"name": a.name, "id": sid, "status": st["stack_status"], "workers": a.workers,
           "create_seconds": round(took, 1), "volumes": [], "ports": []}
    by_name = {x["resource_name"]: x for x in res if not x.get("parent_resource")}
    for res_name, dev in vols:
        v = by_name.get(res_name)
        if v is None:
            die("volume %s missing from the stack" % res_name)
        att = (v.get("attributes") or {}).get("attachments") or []
        if isinstance(att, list) and att and att[0].get("device"):
            dev = att[0]["device"]
        out["volumes"].append({"resource": res_name, "id": v["physical_resource_id"], "device": dev})
    fips = {}
    for x in res:
        if x["resource_type"] == "OS::Neutron::FloatingIP":
            at = x.get("attributes") or {}
            fips[at.get("port_id")] = at.get("floating_ip_address")
    for x in res:
        if x["resource_type"] == "OS::Neutron::Port":
            at = x.get("attributes") or {}
            ip = (at.get("fixed_ips") or [{}])[0].get("ip_address")
            out["ports"].append({"resource": x["resource_name"],
                                 "member": x.get("parent_resource") or "",
                                 "id": x["physical_resource_id"], "ip": ip,
                                 "floating_ip": fips.get(x["physical_resource_id"])})
    out["ports"].sort(key=lambda p: tuple(int(o) for o in (p["ip"] or "0.0.0.0").split(".")))
    if not a.no_state:
        tmp = os.path.join(RUN, "stack.json.tmp")
        with open(tmp, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        os.replace(tmp, os.path.join(RUN, "stack.json"))
    json.dump(out, sys.stdout, indent=2)
    print()


def main():
    p = argparse.ArgumentParser(prog="heat.sh")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create")
    c.add_argument("name")
    c.add_argument("workers", type=int)
    c.add_argument("volumes", type=int)
    c.add_argument("--pools")
    c.add_argument("--replace", action="store_true")
    c.add_argument("--no-state", action="store_true", help="do not write stack.json")
    c.add_argument("--networks", default="net_master,net_worker,net_storage",
                   type=lambda v: v.split(","), help="network names of the master, worker and storage CPs")
    d = sub.add_parser("delete")
    d.add_argument("name")
    a = p.parse_args()
    try:
        h = Heat()
        if a.cmd == "create":
            create(h, a)
        else:
            delete(h, a.name)
    except ksexc.ClientException as e:
        die("keystone/heat: %s" % e)


if __name__ == "__main__":
    main()
