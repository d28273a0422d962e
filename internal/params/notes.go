package params

import "fmt"

// Notes are what a reviewer of a valid request should know about what
// heatsible will and will not do with it, for validate and plan to print.
// They are not warnings: nothing in the request is wrong.
func (r *Request) Notes() []string {
	var notes []string
	if n := scriptPathNote(r); n != "" {
		notes = append(notes, n)
	}
	if a := r.Cluster.Ansible; a != nil && a.KubesprayRootPath == "" && a.TransferringInventoryPath == "" {
		// Seed 003's own body: an ansible block with both paths empty.
		notes = append(notes, fmt.Sprintf("%s.ansible: kubespray_root_path and transferring_inventory_path are empty, so heatsible runs no kubespray playbook: "+
			"the cluster is taken as installed, a worker's heal or scale-out joins it with kubeadm, and ansible.ip_address is only the host heatsible's roles run on. "+
			"To have heatsible install and scale the cluster with kubespray, give both paths", Prefix))
	}
	if r.Cluster.StorageServer == nil {
		if r.NFSClient() {
			notes = append(notes, fmt.Sprintf("%s: there is no storage_server, so heatsible sets up no NFS server (no cinder_volume, no nfs_server); "+
				"it still installs the NFS client (nfs_client) on every master and worker and registers the PVs of pv_registration_params (pv_register), which point at servers heatsible does not set up", Prefix))
		} else {
			// Tacker's driver installs NFS clients only for a storage server.
			notes = append(notes, fmt.Sprintf("%s: there is no storage_server and no pv_registration_params, so heatsible runs none of its storage roles: "+
				"no Cinder volume or NFS server is set up (cinder_volume, nfs_server), no NFS client is installed on the masters and workers (nfs_client), and no PV is registered (pv_register); "+
				"the nodes' packages are left as they are. To have PVs, give storage_server and pv_registration_params", Prefix))
		}
	}
	return notes
}

// NFSClient reports whether the masters and workers get the NFS client
// (roles/nfs_client): when the request has a storage server, or PVs to
// register (an NFS PV may point at a server heatsible does not set up).
// Without either, as Tacker's driver, heatsible installs no NFS client.
func (r *Request) NFSClient() bool {
	return r.Cluster.StorageServer != nil || len(r.Cluster.PVRegistrationParams) > 0
}
