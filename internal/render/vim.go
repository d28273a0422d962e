package render

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
)

// Tacker's Kubernetes VIM (docs/hooks.md, "Tacker's Kubernetes VIM"; the
// contract with contrib/tacker). instantiate-end and heal-end --cluster run
// the k8s_vim role on the first master: a ServiceAccount bound to
// cluster-admin and a long-lived token Secret for it. The role hands the
// token to heatsible through a 0600 file of the run bundle (VIMInfoFile),
// written by no_log tasks and read back before the bundle is removed
// (ansible.PlaybookOptions.Collect): it never travels in an event, so neither
// the progress lines nor the run record can show it. heatsible then builds
// the VIM (internal/lcm, vim.go) and adds the token to every masker before
// anything prints. Here: the VIM's endpoint, known before anything runs.
const (
	// VIMRole is the role (and its tag).
	VIMRole = "k8s_vim"
	// VIMInfoFile is the role's k8s_vim_info_file, relative to the bundle.
	VIMInfoFile = "vim-info.json"
	// VIMNamespace and VIMServiceAccount name the ServiceAccount (the
	// role's defaults).
	VIMNamespace      = "kube-system"
	VIMServiceAccount = "heatsible-tacker-vim"
	// VIMTokenSecret is its token Secret.
	VIMTokenSecret = "heatsible-tacker-vim-token"
)

// VIMEndpoint is where Tacker reaches the API server, as far as the request
// and the topology tell before anything runs.
type VIMEndpoint struct {
	// Host is an IP address or host name.
	Host string `json:"host"`
	// HostFrom says where Host comes from.
	HostFrom string `json:"host_from"`
	// Port is the load balancer's API frontend port; 0: the port of the
	// admin kubeconfig's server URL, found on the first master.
	Port     int    `json:"port,omitempty"`
	PortFrom string `json:"port_from"`
	// Note is what a reviewer should know about the choice, or "".
	Note string `json:"note,omitempty"`
	// Warning says the endpoint is one master of several rather than a
	// VIP in front of them (oneMasterOfSeveral), or "".
	Warning string `json:"warning,omitempty"`
}

// String is the server URL, with a placeholder for a port learned at run time.
func (e VIMEndpoint) String() string {
	if e.Port > 0 {
		return "https://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	h := e.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return "https://" + h + ":<the admin kubeconfig's port>"
}

// preparesVIM reports whether op prepares Tacker's Kubernetes VIM.
func (op Op) preparesVIM() bool {
	return op.Name == OpInstantiateEnd || op.Name == OpHealEnd && op.Target == TargetCluster
}

// buildsCluster reports whether op sets up the cluster as a whole on VMs
// Heat created for it: instantiate-end, and heal-end --cluster (Tacker
// recreated every VM; its kubeadm driver would run script_path again).
// Without --tags they refuse a script_path that nothing would run
// (params.ScriptPathProblem). Not heal-start --cluster: it only removes
// heatsible's state, nothing runs on the VMs, and the shim's kubeadm
// variant runs it without --tags (before Tacker's heal of the whole VNF).
// They are the operations that prepare the VIM (preparesVIM).
func (op Op) buildsCluster() bool {
	return op.preparesVIM()
}

// vimLBAPIPort says whether the external load balancer that
// external_lb_param's script (read from the package in pkgDir) sets up
// fronts the Kubernetes API server, and on which port (from says how that
// is known): ExternalLBAPIPort, by the script's interface. A script of
// Tacker's contract (install_external_lb.sh) has "frontend
// kubernetes-apiserver", bind *:8383, in front of every master's 6443, and
// Tacker's kubespray driver registers its VIM there (kubespray_mgmt.py,
// _create_vim: https://<the LB's ssh_cp_name address>:8383, no
// ssl_ca_cert); heatsible's own interface (docs/external-lb.md) routes to
// the workers' NodePorts only. A script validate could not read fronts
// nothing (validate has refused it already). A variable: tests replace it.
var vimLBAPIPort = func(req *params.Request, pkgDir string) (port int, from string, ok bool) {
	port, err := ExternalLBAPIPort(req, pkgDir)
	if err != nil || port == 0 {
		return 0, "", false
	}
	return port, fmt.Sprintf("the frontend kubernetes-apiserver (bind *:%d) that a script of Tacker's contract (install_external_lb.sh) sets up, where Tacker's kubespray driver registers its VIM", port), true
}

// vimEndpoint works out the VIM's endpoint: the external load balancer's
// address and API frontend port when its script has one, else
// master_node.cluster_cp_name's address (the first master's when there is
// none) and the admin kubeconfig's port.
func vimEndpoint(req *params.Request, t *topology.Topology, pkgDir string) (VIMEndpoint, error) {
	c := req.Cluster
	var e VIMEndpoint
	if lb := c.ExternalLBParam; lb != nil {
		if port, from, ok := vimLBAPIPort(req, pkgDir); ok {
			addr := t.CPs[lb.SSHCPName]
			if addr == "" {
				for _, n := range t.ByRole(topology.RoleExternalLB) {
					addr = n.SSHAddress
					break
				}
			}
			if addr == "" {
				return e, fmt.Errorf("%s.external_lb_param.ssh_cp_name: %q has no address in the topology, so Tacker's Kubernetes VIM has no endpoint", params.Prefix, lb.SSHCPName)
			}
			if port <= 0 || port > 65535 {
				return e, fmt.Errorf("the external load balancer's API frontend port %d (%s) is not a TCP port", port, from)
			}
			e = VIMEndpoint{Host: addr, HostFrom: "the external load balancer (external_lb_param.ssh_cp_name " + lb.SSHCPName + ")", Port: port, PortFrom: from}
			return e, checkVIMHost(e)
		}
		e.Note = "the external load balancer's script (external_lb_param.script_path) follows heatsible's interface, " +
			"whose load balancer routes to the workers' NodePorts only, not to the API server: Tacker reaches the API server directly"
	}
	if m := c.MasterNode; m != nil && m.ClusterCPName != "" {
		e.Host, e.HostFrom = t.CPs[m.ClusterCPName], "master_node.cluster_cp_name "+m.ClusterCPName
		if e.Host == "" {
			return e, fmt.Errorf("%s.master_node.cluster_cp_name: %q has no address in the topology, so Tacker's Kubernetes VIM has no endpoint", params.Prefix, m.ClusterCPName)
		}
		e.Warning = oneMasterOfSeveral(m.ClusterCPName, e.Host, t)
	} else {
		masters := t.ByRole(topology.RoleMaster)
		if len(masters) == 0 {
			return e, errors.New("the cluster has no master: Tacker's Kubernetes VIM has no endpoint")
		}
		e.Host, e.HostFrom = masters[0].Address, "the first master's address (the request has no master_node.cluster_cp_name)"
	}
	e.PortFrom = "the admin kubeconfig's server URL"
	return e, checkVIMHost(e)
}

// oneMasterOfSeveral warns when cluster_cp_name's address is one master's
// own while the cluster has several: the seeds' bodies name a master
// member's CP (masterNode_CP1), which discovery resolves to the first
// master (internal/heat, memberCP); a VIP port of the top stack (Tacker's
// vip_CP) has an address of its own and gets no warning.
func oneMasterOfSeveral(cp, addr string, t *topology.Topology) string {
	masters := t.ByRole(topology.RoleMaster)
	if len(masters) < 2 {
		return ""
	}
	for _, n := range masters {
		if n.Address == addr || n.SSHAddress == addr {
			return fmt.Sprintf("master_node.cluster_cp_name %s is the address of the master %s, one of the cluster's %d masters, not a VIP: "+
				"Tacker reaches the API server through that master only, and loses it while that master is down or healed; "+
				"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name",
				cp, n.Name, len(masters))
		}
	}
	return ""
}

// checkVIMHost refuses a host that is neither an IP address nor a host
// name: it goes into a URL and, as a role variable, into a playbook.
func checkVIMHost(e VIMEndpoint) error {
	if !topology.ValidAddress(e.Host) {
		return fmt.Errorf("Tacker's Kubernetes VIM endpoint %q (%s) is not an IP address or host name", e.Host, e.HostFrom)
	}
	return nil
}
