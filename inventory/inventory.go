// Package inventory builds heatsible's Ansible inventory from the cluster's
// nodes (Node: this package's own model; heatsible maps its topology onto
// it in internal/render) and writes it as INI or YAML. The layout is kubespray's
// (kube_control_plane, etcd, kube_node, calico_rr, k8s_cluster) plus the
// storage groups nfs_server and nfs_client. Kubespray builds the
// inventory heatsible hands kubespray (its groups only), and Marshal writes
// every YAML vars file heatsible gives Ansible (strings tagged !unsafe, see
// literal.go): there is one inventory builder.
//
// No secret ever goes into an inventory: passwords travel in a separate
// 0600 vars file that the runner removes after the run.
package inventory

import (
	"fmt"
	"regexp"
)

// Group names.
const (
	GroupAll              = "all"
	GroupKubeControlPlane = "kube_control_plane"
	GroupEtcd             = "etcd"
	GroupKubeNode         = "kube_node"
	GroupCalicoRR         = "calico_rr"
	GroupK8sCluster       = "k8s_cluster"
	GroupNFSServer        = "nfs_server"
	GroupNFSClient        = "nfs_client"
	GroupExternalLB       = "external_lb"
)

// Var is one host variable. Order is kept so the output is stable.
type Var struct {
	Name, Value string
}

// Host is one inventory host.
type Host struct {
	Name string
	Vars []Var
}

// Group is one inventory group: direct hosts and/or child groups.
type Group struct {
	Name     string
	Hosts    []string
	Children []string
}

// Inventory is the whole inventory. Hosts is what Ansible calls "all".
type Inventory struct {
	Hosts  []Host
	Groups []Group
}

// Role is what a node is to the cluster, which decides its groups.
type Role string

// Roles.
const (
	// Master is a Kubernetes control-plane node (kube_control_plane, etcd).
	Master Role = "master"
	// Worker is a Kubernetes worker (kube_node).
	Worker Role = "worker"
	// Storage is the NFS storage server (nfs_server).
	Storage Role = "storage"
	// ExternalLB is the external load balancer (external_lb).
	ExternalLB Role = "external_lb"
)

// Node is one machine of the cluster, as an inventory needs it.
type Node struct {
	// Name is the inventory host name.
	Name string
	Role Role
	// SSHAddress is where Ansible reaches the node (ansible_host); Address
	// its address inside the cluster (ip, and kubespray's access_ip).
	SSHAddress, Address string
}

// Users gives the SSH user per node role (from the request).
type Users struct {
	Master, Worker, Storage, ExternalLB string
}

func (u Users) of(r Role) string {
	switch r {
	case Master:
		return u.Master
	case Worker:
		return u.Worker
	case Storage:
		return u.Storage
	case ExternalLB:
		return u.ExternalLB
	}
	return ""
}

// safeValue is what heatsible lets into an inventory value: host names, IP
// addresses (v4 and v6) and user names. Anything else would need Ansible's
// INI quoting, and nothing heatsible writes needs it.
var safeValue = regexp.MustCompile(`^[A-Za-z0-9_.:@-]+$`)

// Build makes the inventory of nodes, in their order. Every node becomes a
// host of its name; ansible_host is its SSH address, ip its internal
// address.
func Build(nodes []Node, users Users) (*Inventory, error) {
	if err := checkNodes(nodes); err != nil {
		return nil, err
	}
	inv := &Inventory{}
	byRole := map[Role][]string{}
	for _, n := range nodes {
		user := users.of(n.Role)
		vars := []Var{{"ansible_host", n.SSHAddress}, {"ip", n.Address}}
		if user != "" {
			vars = append(vars, Var{"ansible_user", user})
		}
		if err := checkVars(n.Name, vars); err != nil {
			return nil, err
		}
		inv.Hosts = append(inv.Hosts, Host{Name: n.Name, Vars: vars})
		byRole[n.Role] = append(byRole[n.Role], n.Name)
	}
	masters, workers := byRole[Master], byRole[Worker]
	inv.Groups = append(kubesprayGroups(masters, workers),
		Group{Name: GroupNFSServer, Hosts: byRole[Storage]},
		Group{Name: GroupNFSClient, Children: []string{GroupKubeControlPlane, GroupKubeNode}},
	)
	if lb := byRole[ExternalLB]; len(lb) > 0 {
		inv.Groups = append(inv.Groups, Group{Name: GroupExternalLB, Hosts: lb})
	}
	return inv, nil
}

// kubesprayGroups are kubespray's groups, which both inventories have (in
// heatsible's, the roles address kube_control_plane and kube_node too).
func kubesprayGroups(masters, workers []string) []Group {
	return []Group{
		{Name: GroupKubeControlPlane, Hosts: masters},
		{Name: GroupEtcd, Hosts: masters},
		{Name: GroupKubeNode, Hosts: workers},
		{Name: GroupCalicoRR},
		{Name: GroupK8sCluster, Children: []string{GroupKubeControlPlane, GroupKubeNode, GroupCalicoRR}},
	}
}

// checkVars refuses a host whose name is an inventory group's or whose
// values hold characters outside safeValue. (The kubespray inventory adds
// its password references, VarRef, after this check.)
func checkVars(host string, vars []Var) error {
	if reservedName(host) {
		return fmt.Errorf("inventory: node %q has the name of an inventory group; Ansible would confuse the host with the group (rename the node)", host)
	}
	for _, v := range vars {
		if !safeValue.MatchString(v.Value) {
			return fmt.Errorf("inventory: host %s: %s %q has characters an inventory cannot hold safely", host, v.Name, v.Value)
		}
	}
	return nil
}

// reservedName reports whether name is the name of a group Ansible or
// heatsible uses: a host of that name makes Ansible warn and patterns such as
// --limit etcd ambiguous.
func reservedName(name string) bool {
	switch name {
	case GroupAll, "ungrouped", GroupKubeControlPlane, GroupEtcd, GroupKubeNode, GroupCalicoRR,
		GroupK8sCluster, GroupNFSServer, GroupNFSClient, GroupExternalLB:
		return true
	}
	return false
}

// Group returns the group called name.
func (inv *Inventory) Group(name string) (Group, bool) {
	for _, g := range inv.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return Group{}, false
}

// Without returns a copy of inv without the named hosts (scale-in).
func (inv *Inventory) Without(names ...string) *Inventory {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	out := &Inventory{}
	for _, h := range inv.Hosts {
		if !drop[h.Name] {
			out.Hosts = append(out.Hosts, h)
		}
	}
	for _, g := range inv.Groups {
		ng := Group{Name: g.Name, Children: g.Children}
		for _, h := range g.Hosts {
			if !drop[h] {
				ng.Hosts = append(ng.Hosts, h)
			}
		}
		out.Groups = append(out.Groups, ng)
	}
	return out
}
