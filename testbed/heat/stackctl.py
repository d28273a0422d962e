"""Create and delete the bed's Tacker-shaped Heat stack (called by heat.sh).

    stackctl.py create NAME WORKERS VOLUMES [--pools FILE] [--replace]
                       [--networks MASTER,WORKER,STORAGE] [--lb NETWORK]
                       [--masters N] [--vip [--vip-network NETWORK]] [--no-state]
    stackctl.py delete NAME
    stackctl.py scale NAME N [--victim MEMBER ...] [--aspect GROUP]

Credentials come from the OS_* variables of testbed/run/heat/env; state goes
to $HEAT_RUN. `create` waits (bounded) for CREATE_COMPLETE and writes
$HEAT_RUN/stack.json (unless --no-state) with the stack id, the node addresses and every volume's
id and device, which the bed needs for its by-id symlinks.

`scale` resizes a group (default worker_instance) to N members the way Tacker
(v2, UserData templates) does: for a scale-in it first marks each --victim
member resource of the group's nested stack unhealthy (PATCH .../resources/
<member> {"mark_unhealthy": true}), then updates the stack (PATCH, existing
template) with the VDU's desired_capacity parameter (nfv.VDU.<vdu>.
desired_capacity) set to N, and waits (bounded, HEAT_SCALE_TIMEOUT: 300 s, or
10 s per member when that is more)
for UPDATE_COMPLETE. Heat keeps the newest N members after sorting failed
ones first, so the victims are exactly the ones removed. (A ScalingPolicy
signal would not do: it adjusts the size counted WITHOUT the failed members,
so marking one victim and signalling -1 removes two members.)
It prints the members (resource name, nested stack id, server id, addresses)
and refreshes stack.json when it describes that stack.
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
# The workers' address pool (net_worker, 10.231.0.20-10.231.0.83) holds 64.
MAX_WORKERS = 64
# Seconds: 600, or 10 s per worker when that is more (Heat creates one nested
# stack per member; see README.md for what it took).
CREATE_TIMEOUT = int(os.environ.get("HEAT_CREATE_TIMEOUT", "0")) or None
SCALE_TIMEOUT = int(os.environ.get("HEAT_SCALE_TIMEOUT", "0")) or None   # 300, or 10 s per member
DELETE_TIMEOUT = int(os.environ.get("HEAT_DELETE_TIMEOUT", "600"))   # 64 members: 77 s at load 4
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


def create_timeout(workers):
    return CREATE_TIMEOUT or max(600, 10 * workers)


def templates(workers, volumes, lb_network=None, vip=False):
    cap = MAX_WORKERS
    top = {
        "heat_template_version": "2013-05-23",
        "description": "heatsible test bed: Tacker-shaped Kubernetes VNF "
                       "(k8s MgmtDriver sample + storage server)",
        "parameters": {"nfv": {"type": "json"}},
        "resources": {
            "master_instance": {
                "type": "OS::Heat::AutoScalingGroup",
                "properties": {
                    "min_size": 1, "max_size": 3,
                    "desired_capacity": {"get_param": ["nfv", "VDU", "masterNode", "desired_capacity"]},
                    "resource": {"type": "nested_master.yaml", "properties": {
                        "flavor": {"get_param": ["nfv", "VDU", "masterNode", "flavor"]},
                        "image": {"get_param": ["nfv", "VDU", "masterNode", "image"]},
                        "net1": {"get_param": ["nfv", "CP", "masterNode_CP1", "network"]}}}}},
            "worker_instance": {
                "type": "OS::Heat::AutoScalingGroup",
                "properties": {
                    "min_size": 0, "max_size": cap,
                    "desired_capacity": {"get_param": ["nfv", "VDU", "workerNode", "desired_capacity"]},
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
    if vip:
        # a VIP port in front of the masters, as in the complex flavour of
        # Tacker's guide (vip_CP, on the masters' network; its masters carry
        # it in allowed_address_pairs, which the stand-in does not model)
        top["resources"]["vip_CP"] = {
            "type": "OS::Neutron::Port",
            "properties": {"network": {"get_param": ["nfv", "CP", "vip_CP", "network"]}}}
    if lb_network:
        # an external load balancer VM in front of the masters, as in Tacker's
        # samples with external_lb_param: a server of the top stack and its port
        top["resources"]["externalLB_CP"] = {
            "type": "OS::Neutron::Port",
            "properties": {"network": {"get_param": ["nfv", "CP", "externalLB_CP", "network"]}}}
        top["resources"]["externalLB"] = {
            "type": "OS::Nova::Server",
            "properties": {
                "flavor": {"get_param": ["nfv", "VDU", "externalLB", "flavor"]},
                "name": "externalLB",
                "image": {"get_param": ["nfv", "VDU", "externalLB", "image"]},
                "networks": [{"port": {"get_resource": "externalLB_CP"}}]}}
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


def params(networks, lb_network=None, workers=0, masters=1, vip_network=None):
    m, w, s = networks
    p = json.loads(json.dumps(PARAMS))
    if vip_network:
        p["nfv"]["CP"]["vip_CP"] = {"network": vip_network}
    p["nfv"]["VDU"]["masterNode"]["desired_capacity"] = masters
    p["nfv"]["VDU"]["workerNode"]["desired_capacity"] = workers
    p["nfv"]["CP"]["masterNode_CP1"]["network"] = m
    p["nfv"]["CP"]["workerNode_CP2"]["network"] = w
    p["nfv"]["CP"]["storage_server_CP"]["network"] = s
    if lb_network:
        p["nfv"]["VDU"]["externalLB"] = dict(p["nfv"]["VDU"]["storage_server"])
        p["nfv"]["CP"]["externalLB_CP"] = {"network": lb_network}
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
    if not 0 <= a.workers <= MAX_WORKERS:
        die("WORKERS must be 0..%d, got %d" % (MAX_WORKERS, a.workers))
    if len(a.networks) != 3:
        die("--networks wants MASTER,WORKER,STORAGE")
    if not 1 <= a.volumes <= 3:
        die("VOLUMES must be 1..3, got %d" % a.volumes)
    if a.vip_network and not a.vip:
        die("--vip-network wants --vip")
    if not 1 <= a.masters <= 3:
        die("--masters must be 1..3 (the master group's max_size), got %d" % a.masters)
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
    top, files, vols = templates(a.workers, a.volumes, a.lb, a.vip)
    timeout = create_timeout(a.workers)
    body = {"stack_name": a.name, "template": top, "files": files,
            "parameters": params(a.networks, a.lb, a.workers, a.masters,
                                 (a.vip_network or a.networks[0]) if a.vip else None),
            "disable_rollback": True, "timeout_mins": max(1, timeout // 60)}
    t0 = time.time()
    end = t0 + timeout
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

    out = describe(h, a.name, sid, vols)
    out.update({"status": st["stack_status"], "workers": a.workers, "masters": a.masters, "create_seconds": round(took, 1),
                "external_lb": bool(a.lb)})
    if not a.no_state:
        write_state(out)
    json.dump(out, sys.stdout, indent=2)
    print()


def listing(h, name, sid):
    """Every resource of the stack and its members, attributes inline."""
    r = h.req("GET", "/stacks/%s/%s/resources?nested_depth=2&with_detail=true" % (name, sid))
    if r.status_code != 200:
        die("listing resources of %s/%s: HTTP %d %s" % (name, sid, r.status_code, r.text[:300]))
    return r.json()["resources"]


def describe(h, name, sid, vols, res=None):
    """What the bed needs to know of the stack: volumes and ports (stack.json)."""
    res = res if res is not None else listing(h, name, sid)
    out = {"name": name, "id": sid, "volumes": [], "ports": []}
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
    return out


def write_state(out):
    tmp = os.path.join(RUN, "stack.json.tmp")
    with open(tmp, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(RUN, "stack.json"))


def members(res, group):
    """The group's members, oldest first: member resource name, its nested
    stack id, status, server id and the addresses of its ports."""
    out = []
    for m in res:
        if m.get("parent_resource") != group:   # every row of the group's nested stack is a member
            continue
        inner = [x for x in res if x.get("parent_resource") == m["resource_name"]]
        srv = [x for x in inner if x["resource_type"] == "OS::Nova::Server"]
        ports = [x for x in inner if x["resource_type"] == "OS::Neutron::Port"]
        fips = [x for x in inner if x["resource_type"] == "OS::Neutron::FloatingIP"]
        ip = fip = None
        if ports:
            ip = ((ports[0].get("attributes") or {}).get("fixed_ips") or [{}])[0].get("ip_address")
        if fips:
            fip = (fips[0].get("attributes") or {}).get("floating_ip_address")
        out.append({"member": m["resource_name"], "stack_id": m["physical_resource_id"],
                    "status": m["resource_status"], "created": m.get("creation_time"),
                    "server_id": srv[0]["physical_resource_id"] if srv else None,
                    "ip": ip, "floating_ip": fip})
    out.sort(key=lambda x: (x["created"] or "", x["member"]))
    return out


def nested_ref(h, sid):
    """name/id of a nested stack, from its id."""
    st = h.stack(sid)
    if st is None:
        die("nested stack %s not found" % sid)
    return "%s/%s" % (st["stack_name"], st["id"])


VDU_OF = {"worker_instance": "workerNode", "master_instance": "masterNode"}


def scale(h, a):
    st = h.stack(a.name)
    if st is None:
        die("stack %s does not exist" % a.name)
    name, sid = st["stack_name"], st["id"]
    if st["stack_status"].endswith("IN_PROGRESS"):
        die("stack %s is %s" % (name, st["stack_status"]))
    if a.aspect not in VDU_OF:
        die("--aspect %s: want one of %s" % (a.aspect, ", ".join(sorted(VDU_OF))))
    res = listing(h, name, sid)
    top = {x["resource_name"]: x for x in res if not x.get("parent_resource")}
    grp = top.get(a.aspect)
    if grp is None or not grp["resource_type"].endswith("AutoScalingGroup"):
        die("stack %s has no AutoScalingGroup %s" % (name, a.aspect))
    before = members(res, a.aspect)
    names = [m["member"] for m in before]
    cur, want = len(before), a.n
    if want < 0 or want > MAX_WORKERS:
        die("N must be 0..%d, got %d" % (MAX_WORKERS, want))
    for v in a.victim:
        if v not in names:
            die("--victim %s is not a member of %s (members: %s)" % (v, a.aspect, ", ".join(names) or "none"))
    if len(set(a.victim)) != len(a.victim):
        die("--victim names a member twice")
    if a.victim and cur - want != len(a.victim):
        die("%d victim(s) given, but %d -> %d removes %d member(s)" % (len(a.victim), cur, want, cur - want))
    nfv = st.get("parameters", {}).get("nfv")
    try:
        nfv = json.loads(nfv) if isinstance(nfv, str) else nfv
        nfv["VDU"][VDU_OF[a.aspect]]["desired_capacity"]
    except (TypeError, KeyError, ValueError):
        die("stack %s has no parameter nfv.VDU.%s.desired_capacity (made by an older stack-create?)"
            % (name, VDU_OF[a.aspect]))
    t0 = time.time()
    timeout = SCALE_TIMEOUT or max(300, 10 * max(cur, want))
    end = t0 + timeout
    log("%s/%s: %s has %d member(s), want %d%s" % (name, sid, a.aspect, cur, want,
        (", victims " + " ".join(a.victim)) if a.victim else ""))
    # stack.json (the bed's view) says "scaling" until this is done: if it fails
    # half way, bed up sees a stack of unknown shape and re-creates it
    sj = os.path.join(RUN, "stack.json")
    try:
        with open(sj) as f:
            state = json.load(f)
    except (OSError, ValueError):
        state = None
    if state and state.get("id") != sid:
        state = None
    if state:
        state["status"] = "SCALING"
        write_state(state)
    if a.victim:
        gref = nested_ref(h, grp["physical_resource_id"])
        for v in a.victim:
            r = h.req("PATCH", "/stacks/%s/resources/%s" % (gref, v),
                      json={"mark_unhealthy": True,
                            "resource_status_reason": "scale-in victim (testbed heat.sh stack-scale)"})
            if r.status_code not in (200, 202, 204):
                die("marking %s unhealthy: HTTP %d %s" % (v, r.status_code, r.text[:300]))
            log("marked %s unhealthy" % v)
    nfv["VDU"][VDU_OF[a.aspect]]["desired_capacity"] = want
    prev = st.get("updated_time")
    r = h.req("PATCH", "/stacks/%s/%s" % (name, sid), json={"parameters": {"nfv": nfv}})
    if r.status_code not in (200, 202):
        die("PATCH stack %s (desired_capacity %d): HTTP %d %s" % (name, want, r.status_code, r.text[:300]))
    while True:
        if time.time() > end:
            die("stack %s: no UPDATE_COMPLETE within %d s (HEAT_SCALE_TIMEOUT)" % (name, timeout))
        time.sleep(0.5)
        cur_st = h.stack("%s/%s" % (name, sid))
        s_ = cur_st["stack_status"]
        if s_ == "UPDATE_FAILED":
            die("stack %s: UPDATE_FAILED: %s" % (name, cur_st.get("stack_status_reason")))
        if s_ == "UPDATE_COMPLETE" and cur_st.get("updated_time") != prev:
            break
    res = listing(h, name, sid)
    after = members(res, a.aspect)
    now = set(m["member"] for m in after)
    gone = [n for n in names if n not in now]
    if len(after) != want:
        die("%s has %d member(s) after the update, want %d" % (a.aspect, len(after), want))
    if a.victim and sorted(gone) != sorted(a.victim):
        die("Heat removed %s, not the victims %s" % (", ".join(gone) or "nothing", ", ".join(a.victim)))
    for m in after:
        m["new"] = m["member"] not in names
    took = time.time() - t0
    out = {"stack": "%s/%s" % (name, sid), "group": a.aspect, "members": after,
           "added": [m["member"] for m in after if m["new"]], "removed": gone, "seconds": round(took, 1)}
    log("%s: %d -> %d member(s) in %.1fs; added %s; removed %s" % (
        a.aspect, cur, want, took, " ".join(out["added"]) or "-", " ".join(gone) or "-"))
    if state:
        vols = [(v["resource"], v["device"]) for v in state.get("volumes", [])]
        state.update(describe(h, name, sid, vols, res))
        state["status"] = "UPDATE_COMPLETE"
        if a.aspect == "worker_instance":
            state["workers"] = want
        state.setdefault("scaled", []).append({"group": a.aspect, "from": cur, "to": want,
                                              "added": out["added"], "removed": gone})
        write_state(state)
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
    c.add_argument("--lb", metavar="NETWORK", help="add the external load balancer server "
                   "externalLB and its port externalLB_CP on NETWORK")
    c.add_argument("--masters", type=int, default=1, metavar="N",
                   help="members of the master group (1..3; its addresses come from the master network's pool)")
    c.add_argument("--vip", action="store_true", help="add a VIP port vip_CP to the top stack on "
                   "the master network, as the complex flavour of Tacker's guide has")
    c.add_argument("--vip-network", metavar="NETWORK", help="the network of vip_CP (default the master "
                   "network): a pool of its own makes the VIP's address known before the masters' are taken")
    d = sub.add_parser("delete")
    d.add_argument("name")
    sc = sub.add_parser("scale")
    sc.add_argument("name")
    sc.add_argument("n", type=int)
    sc.add_argument("--victim", action="append", default=[], metavar="MEMBER",
                    help="member resource name to remove (scale-in), as Tacker names them")
    sc.add_argument("--aspect", default="worker_instance", help="the AutoScalingGroup (default worker_instance)")
    a = p.parse_args()
    try:
        h = Heat()
        if a.cmd == "create":
            create(h, a)
        elif a.cmd == "scale":
            scale(h, a)
        else:
            delete(h, a.name)
    except ksexc.ClientException as e:
        die("keystone/heat: %s" % e)


if __name__ == "__main__":
    main()
