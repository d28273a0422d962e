"""tacker_driver.py - time the storage steps of Tacker's own sample
KubernetesMgmtDriver on the test bed's hosts, for `make bench` (bench/bed.sh).

Run with the Python of the bed's Tacker venv (testbed/run/tacker/env:
TACKER_VENV), as root, on a bed that is up:

    $TACKER_VENV/bin/python bench/tacker_driver.py --tacker-src $TACKER_SRC \
        --conf $TACKER_CONF --run testbed/run [--stack bed]

TACKER_SRC is an unpacked Tacker source tree (the sdist of the installed
version: `pip download tacker==16.0.0 --no-deps --no-binary :all:`); its
samples/mgmt_driver/kubernetes/kubernetes_mgmt.py is imported as it is, with
the installed Tacker package under it. Nothing of Tacker's is copied here.

What it builds, as tacker-conductor has them when it calls instantiate_end:
Tacker's configuration (the bed's tacker.conf, so the real database, Fernet
VIM keys and the bed's OpenStack VIM registered in Tacker), an admin
context, objects registered; a VimConnectionInfo for the default VIM Tacker
has (VimClient.get_vim), an InstantiateVnfRequest made from the bed's
request.json the way Tacker's v1 API makes it (camelCase to snake_case,
InstantiateVnfRequest.obj_from_primitive: the seeds' additionalParams), and a
VnfInstance whose instantiated_vnf_info.instance_id is the bed's Heat stack.
The driver then finds every address itself, in Heat, through its own
_get_install_info_for_k8s_node (masters and workers) and the storage CP
(_install_storage_server): nothing of the hosts' addresses is given to it.

It calls, in instantiate_end's order and with instantiate_end's arguments:
    _install_storage_server(context, vnf_instance, proxy, storage_server)
    _install_nfs_client(user, password, ip) for each master, then each worker
    _get_connect_master(masters) + _register_persistent_volumes(...)
and prints one line per step, "step NAME SECONDS", then "total SECONDS".
Not called: _install_k8s_cluster (the bed's cluster is up already) and
_create_vim (Tacker's VIM registration, not a storage step).

What is patched, because it cannot exist on the bed (and nothing else):
  1. vnflcm_utils._get_vnf_package_path -> the bed's package directory
     (testbed/run/package, the one heatsible and bench/baseline.sh read).
     Tacker looks the path up in its database by the VNF package that
     instantiated the stack; the bed's stack `bed` was made by the bed's
     scripts, not by Tacker, so no package row names it.
  2. _check_envi: the driver refuses any storage server that is not Ubuntu
     20.04; the bed's hosts are Debian 12. The same command still runs over
     the same SSH session (its round trip is timed); only the verdict is
     skipped (the OS it found is printed).
  3. `chown nobody.nogroup` -> `chown nobody:nogroup` in the one command
     that has it: Debian 12's chown (coreutils 9.1) warns on stderr about the
     dot form ("warning: '.' should be ':'"), which Ubuntu 20.04's (8.30) does
     not, and the driver fails any command with stderr. Same effect.
  4. debconf's "delaying package configuration, since apt-utils is not
     installed" dropped from a command's stderr (only that line): the
     bed's hosts have no apt-utils, Ubuntu's cloud images do; with it, the
     driver fails at the first package it installs (seen: nfs-common on
     master-0 with BENCH_PURGE_CLIENT=1, MgmtDriverRemoteCommandError).
The bed stands in for the VMs as it does for heatsible (docs/testbed.md):
the machine's kernel has no nfsd, so `exportfs -ra` writes the export table
and nothing serves it (the driver never starts nor checks an NFS server);
kubectl as the SSH user needs the admin kubeconfig where Tacker's kubeadm
script puts it (~/.kube/config): bench/bed.sh switches master-0 to
`bed kubeconfig kubeadm` for this run and back after.
"""

import argparse
import json
import os
import sys
import time

import eventlet

eventlet.monkey_patch()  # as tacker-conductor runs (tacker/cmd/eventlet)

from oslo_config import cfg  # noqa: E402
from oslo_log import log as logging  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--tacker-src', required=True)
    ap.add_argument('--conf', required=True)
    ap.add_argument('--run', required=True, help='the bed\'s testbed/run')
    ap.add_argument('--stack', default='bed')
    ap.add_argument('--plan', action='store_true',
                    help='read Heat only: print the hosts the driver found '
                         '(no host is touched)')
    a = ap.parse_args()

    sample = os.path.join(a.tacker_src, 'samples', 'mgmt_driver', 'kubernetes')
    if not os.path.isfile(os.path.join(sample, 'kubernetes_mgmt.py')):
        sys.exit('tacker_driver: TACKER_SRC %s has no samples/mgmt_driver/'
                 'kubernetes/kubernetes_mgmt.py' % a.tacker_src)
    from importlib import metadata
    installed = metadata.version('tacker')
    src_ver = _src_version(a.tacker_src)
    if src_ver and src_ver != installed:
        sys.exit('tacker_driver: TACKER_SRC is Tacker %s, the venv has %s: '
                 'use the source of the installed version' % (src_ver, installed))

    from tacker.conductor import conductor_server
    from tacker import context as t_context
    from tacker import objects
    from tacker.common import utils as t_utils
    from tacker.vnfm import vim_client
    conductor_server.init(['--config-file', a.conf])
    cfg.CONF.set_override('use_stderr', True)
    cfg.CONF.set_override('log_dir', None)
    cfg.CONF.set_override('log_file', None)
    logging.setup(cfg.CONF, 'tacker')
    objects.register_all()

    sys.path.insert(0, sample)
    import kubernetes_mgmt as km
    from tacker.vnflcm import utils as vnflcm_utils

    package = os.path.join(os.path.abspath(a.run), 'package')
    vnflcm_utils._get_vnf_package_path = lambda context, vnfd_id: package  # patch 1

    class Driver(km.KubernetesMgmtDriver):
        def _check_envi(self, commander):  # patch 2
            cmd = ('cat /etc/os-release | grep "PRETTY_NAME=" | '
                   'grep -c "Ubuntu 20.04"; arch | grep -c x86_64')
            out = self._execute_command(commander, cmd, km.NFS_CMD_TIMEOUT,
                                        'common', 3)
            print('note _check_envi: Ubuntu 20.04 %s, x86_64 %s (verdict '
                  'skipped: the bed\'s hosts are Debian 12)' % tuple(
                      x.strip() for x in out[:2]), flush=True)

        def _execute_command(self, commander, ssh_command, *args, **kw):
            ssh_command = ssh_command.replace('chown nobody.nogroup',
                                              'chown nobody:nogroup')  # patch 3
            return super()._execute_command(_NoAptUtilsNote(commander),
                                            ssh_command, *args, **kw)

    # the conductor's context is the requester's (project-scoped): Tacker's
    # default VIM is the default of the project that registered it
    from tacker.nfvo import nfvo_plugin
    vims = [v for v in nfvo_plugin.NfvoPlugin().get_vims(
        t_context.get_admin_context()) if v.get('is_default')]
    if not vims:
        sys.exit('tacker_driver: Tacker has no default VIM (tacker.sh status)')
    ctx = t_context.Context(user_id=None, tenant_id=vims[0]['tenant_id'],
                            is_admin=True)
    vim = vim_client.VimClient().get_vim(ctx)  # Tacker's default VIM
    body = json.load(open(os.path.join(a.run, 'request.json')))
    body['vimConnectionInfo'] = [{'id': '5a0c2c7e-0b3b-4e52-9d1c-2f4be2c1a001',
                                  'vimId': vim['vim_id'], 'vimType': 'openstack'}]
    req = objects.InstantiateVnfRequest.obj_from_primitive(
        t_utils.convert_camelcase_to_snakecase(body), ctx)

    driver = Driver()
    access = driver._get_vim_connection_info(ctx, req).access_info
    from tacker.vnfm.infra_drivers.openstack import heat_client as hc
    stack = hc.HeatClient(access).stacks.get(a.stack)
    vnf_instance = objects.VnfInstance(
        context=ctx, id='5a0c2c7e-0b3b-4e52-9d1c-2f4be2c1a002',
        vnfd_id='5a0c2c7e-0b3b-4e52-9d1c-2f4be2c1a003',
        vim_connection_info=req.vim_connection_info,
        instantiated_vnf_info=objects.InstantiatedVnfInfo(
            flavour_id=req.flavour_id, instance_id=stack.id))

    p = req.additional_params['k8s_cluster_installation_param']
    masters = driver._get_install_info_for_k8s_node(
        stack.id, p['master_node'], req.additional_params, 'master', access,
        vnf_instance, None)
    workers = driver._get_install_info_for_k8s_node(
        stack.id, p['worker_node'], req.additional_params, 'worker', access,
        vnf_instance, None)
    print('hosts: masters %s, workers %s' % (
        ' '.join(m['ssh']['ipaddr'] for m in masters),
        ' '.join(w['ssh']['ipaddr'] for w in workers)), flush=True)
    if a.plan:
        return

    total = 0.0

    def step(name, fn, *args):
        nonlocal total
        t = time.monotonic()
        fn(*args)
        s = time.monotonic() - t
        total += s
        print('step %s %.2f' % (name, s), flush=True)

    step('install_storage_server', driver._install_storage_server, ctx,
         vnf_instance, p.get('proxy', {}), p['storage_server'])
    for vm in masters + workers:
        ssh = vm['ssh']
        step('install_nfs_client:%s' % ssh['ipaddr'], driver._install_nfs_client,
             ssh['username'], ssh['password'], ssh['ipaddr'])
    holder = {}

    def register():
        commander, m = driver._get_connect_master(masters)
        holder['c'] = commander
        driver._register_persistent_volumes(
            ctx, vnf_instance, commander, m['ssh']['username'],
            m['ssh']['password'], m['ssh']['ipaddr'],
            p['pv_registration_params'])
    step('register_persistent_volumes', register)
    print('total %.2f' % total, flush=True)
    # not timed: what the PVs say now (the address the driver wrote, phase)
    import yaml
    for reg in p['pv_registration_params']:
        name = yaml.safe_load(open(os.path.join(
            package, reg['pv_manifest_file_path'])))['metadata']['name']
        out = driver._execute_command(
            holder['c'], "kubectl get pv %s -o jsonpath='{.spec.nfs.server} "
            "{.status.phase}'" % name, km.NFS_CMD_TIMEOUT, 'common', 0)
        print('check pv %s %s' % (name, ''.join(out).strip()), flush=True)


# patch 4: the one stderr line apt's debconf writes when a package is
# installed on a host without apt-utils (the bed's Debian 12 hosts; Ubuntu's
# cloud images have it, so the line never comes there). The driver fails any
# command with stderr; every other line is left as it came.
APT_UTILS_NOTE = ('debconf: delaying package configuration, since apt-utils '
                  'is not installed')


class _NoAptUtilsNote(object):
    def __init__(self, commander):
        self._c = commander

    def execute_command(self, cmd, input_data=None):
        r = self._c.execute_command(cmd, input_data=input_data)
        err = r.get_stderr()
        kept = [x for x in err if x.rstrip('\n') != APT_UTILS_NOTE]
        if len(kept) != len(err):
            print('note apt-utils: debconf\'s line dropped from the stderr of '
                  '%r' % cmd[:60], flush=True)
            r._CommandResult__stderr = kept  # CommandResult keeps it private
        return r


def _src_version(src):
    try:
        for line in open(os.path.join(src, 'PKG-INFO')):
            if line.startswith('Version:'):
                return line.split(':', 1)[1].strip()
    except OSError:
        return None
    return None


if __name__ == '__main__':
    main()
