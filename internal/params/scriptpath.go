package params

import "fmt"

// ScriptPathProblem is the refusal of a request whose script_path nothing
// would run, or nil. script_path is Tacker's Kubernetes installation script
// (the PV guide's Scripts/install_k8s_cluster.sh, run by Tacker's kubeadm
// MgmtDriver); heatsible never runs it, and without
// ansible.kubespray_root_path it installs no Kubernetes either: the cluster
// would be taken as installed although the request asks for a script to
// install it. An operation that builds the cluster (instantiate-end,
// heal-end --cluster) without --tags refuses it: validate
// (Options.WholeRun) and lcm's precheck for run and plan. With --tags (the
// Tacker shim's kubeadm variant runs the script through Tacker's driver,
// then heatsible's storage roles with --tags) Notes says it instead.
func (r *Request) ScriptPathProblem() *Problem {
	c := &r.Cluster
	if c.ScriptPath == "" || kubesprayInstalls(r) {
		return nil
	}
	return &Problem{Path: Prefix + ".script_path", Msg: fmt.Sprintf("%s is Tacker's Kubernetes installation script, which heatsible does not run; "+
		"and with no ansible.kubespray_root_path nothing would install Kubernetes: heatsible would take the cluster as installed. "+
		"Use the Tacker shim's kubeadm variant (contrib/tacker/README.md, \"the kubeadm variant\"), which runs this script through Tacker's driver and then heatsible with --tags; "+
		"or give ansible.kubespray_root_path and ansible.transferring_inventory_path to have kubespray install the cluster; "+
		"or, if Kubernetes is installed some other way, remove script_path", quote(c.ScriptPath))}
}

// kubesprayInstalls reports whether heatsible installs the cluster with
// kubespray (ansible.kubespray_root_path is given).
func kubesprayInstalls(r *Request) bool {
	return r.Cluster.Ansible != nil && r.Cluster.Ansible.KubesprayRootPath != ""
}

// scriptPathNote is Notes' line about a script_path that was not refused:
// what heatsible does instead of running it.
func scriptPathNote(r *Request) string {
	c := &r.Cluster
	if c.ScriptPath == "" {
		return ""
	}
	if kubesprayInstalls(r) {
		return fmt.Sprintf("%s.script_path: heatsible does not run %s (Tacker's Kubernetes installation script): kubespray (ansible.kubespray_root_path) installs the cluster", Prefix, quote(c.ScriptPath))
	}
	return fmt.Sprintf("%s.script_path: heatsible does not run %s (Tacker's Kubernetes installation script) and takes the cluster as installed, as the Tacker shim's kubeadm variant has it (Tacker's driver runs the script, then heatsible with --tags); "+
		"instantiate-end and heal-end --cluster without --tags refuse this request", Prefix, quote(c.ScriptPath))
}
