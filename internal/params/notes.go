package params

import "fmt"

// Notes are what a reviewer of a valid request should know about what
// heatsible will and will not do with it, for validate and plan to print.
// They are not warnings: nothing in the request is wrong.
func (r *Request) Notes() []string {
	var notes []string
	if a := r.Cluster.Ansible; a != nil && a.KubesprayRootPath == "" && a.TransferringInventoryPath == "" {
		// Seed 003's own body: an ansible block with both paths empty.
		notes = append(notes, fmt.Sprintf("%s.ansible: kubespray_root_path and transferring_inventory_path are empty, so heatsible runs no kubespray playbook: "+
			"the cluster is taken as installed, a worker's heal or scale-out joins it with kubeadm, and ansible.ip_address is only the host heatsible's roles run on. "+
			"To have heatsible install and scale the cluster with kubespray, give both paths", Prefix))
	}
	return notes
}
