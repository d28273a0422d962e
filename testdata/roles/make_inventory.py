#!/usr/bin/env python3
"""Write an Ansible inventory for the test bed, shaped like the group_vars
heatsible renders, so the roles can be run by hand against the bed.

Usage: make_inventory.py OUTDIR [--impl ganesha|kernel] [--bed testbed/run]

Reads testbed/run/{topology.yaml,request.json,env,known_hosts,package/}.
Writes OUTDIR/hosts.ini and OUTDIR/group_vars/all.yml (no secrets),
OUTDIR/secrets.yml (mode 0600: the SSH/sudo password, give it to
ansible-playbook with -e @OUTDIR/secrets.yml), OUTDIR/ansible.cfg and the
edited PV manifests in OUTDIR/pv/ (spec.nfs.server set, heatsible label
added, by editing the parsed YAML as heatsible's Go side does).
"""
import argparse
import json
import os
import shlex
import sys

import yaml


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            if line.startswith("export "):
                line = line[len("export "):]
            k, v = line.split("=", 1)
            parts = shlex.split(v) if v else [""]
            env[k] = parts[0] if parts else ""
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--bed", default=os.path.join(os.path.dirname(__file__), "..", "..", "testbed", "run"))
    ap.add_argument("--impl", default="ganesha", choices=["ganesha", "kernel"])
    a = ap.parse_args()
    bed = os.path.abspath(a.bed)
    out = os.path.abspath(a.outdir)

    topo = yaml.safe_load(open(os.path.join(bed, "topology.yaml")))
    req = json.load(open(os.path.join(bed, "request.json")))
    params = req.get("additionalParams", req)["k8s_cluster_installation_param"]
    env = read_env(os.path.join(bed, "env"))
    user = env.get("BED_USER", "ubuntu")
    password = env["BED_PASSWORD"]

    nodes = topo["nodes"]
    by_role = {}
    for n in nodes:
        by_role.setdefault(n["role"], []).append(n)
    storage = by_role["storage"][0]
    server_addr = topo["cps"][params["storage_server"]["nic_cp_name"]]

    os.makedirs(os.path.join(out, "group_vars"), exist_ok=True)
    os.makedirs(os.path.join(out, "pv"), exist_ok=True)

    lines = ["[all]"]
    for n in nodes:
        lines.append(f"{n['name']} ansible_host={n['ssh_address']} ip={n['address']} ansible_user={user}")
    lines += ["", "[kube_control_plane]"] + [n["name"] for n in by_role.get("master", [])]
    lines += ["", "[kube_node]"] + [n["name"] for n in by_role.get("worker", [])]
    lines += ["", "[k8s_cluster:children]", "kube_control_plane", "kube_node"]
    lines += ["", "[nfs_server]", storage["name"]]
    lines += ["", "[nfs_client:children]", "kube_control_plane", "kube_node", ""]
    open(os.path.join(out, "hosts.ini"), "w").write("\n".join(lines))

    # group_vars: the interface of the roles (roles/*/README.md)
    vols = {v["resource"]: v for v in topo.get("volumes", [])}
    cinder_volumes = []
    for p in params["storage_server"]["cinder_volume_setup_params"]:
        v = vols[p["volume_resource_id"]]
        cinder_volumes.append({"id": v["id"], "device": v.get("device", ""), "mount_to": p["mount_to"]})
    nfs_exports = [{"dir": e["export_dir"], "to": e["export_to"]}
                   for e in params["storage_server"]["nfs_server_setup_params"]]
    pv_manifests = []
    pkg = os.path.join(bed, "package")
    for p in params.get("pv_registration_params", []):
        doc = yaml.safe_load(open(os.path.join(pkg, p["pv_manifest_file_path"])))
        doc["spec"]["nfs"]["server"] = topo["cps"][p["nfs_server_cp"]]
        doc["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "heatsible"
        name = doc["metadata"]["name"]
        dst = os.path.join(out, "pv", name + ".yaml")
        yaml.safe_dump(doc, open(dst, "w"), sort_keys=False)
        pv_manifests.append({"name": name, "src": dst})
    gv = {
        "cinder_volumes": cinder_volumes,
        "nfs_exports": nfs_exports,
        "nfs_server_impl": a.impl,
        "nfs_server_bind_address": server_addr,
        "pv_manifests": pv_manifests,
        "pv_state": "present",
        "proxy_env": {},
    }
    open(os.path.join(out, "group_vars", "all.yml"), "w").write(
        "---\n# written by testdata/roles/make_inventory.py\n" + yaml.safe_dump(gv, sort_keys=False))

    fd = os.open(os.path.join(out, "secrets.yml"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        # !unsafe, as heatsible writes it: Ansible takes the password as
        # typed, whatever it holds (the bed's default holds Jinja).
        q = json.dumps(password)
        f.write(f"---\nansible_password: !unsafe {q}\nansible_become_password: !unsafe {q}\n")

    kh = os.path.join(bed, "known_hosts")
    cfg = f"""[defaults]
inventory = {out}/hosts.ini
roles_path = {os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', 'roles'))}
host_key_checking = True
forks = 10
timeout = 30
interpreter_python = /usr/bin/python3
retry_files_enabled = False
callbacks_enabled = ansible.posix.profile_tasks

[ssh_connection]
pipelining = True
ssh_args = -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes
"""
    open(os.path.join(out, "ansible.cfg"), "w").write(cfg)
    print(out)


if __name__ == "__main__":
    sys.exit(main())
