package inventory

import (
	"bytes"
	"fmt"
	"slices"
)

// KubesprayConn is how kubespray reaches the nodes of one role: the SSH
// user, and whether the request has their password (the inventory then
// refers to it in the run's kubespray vars file).
type KubesprayConn struct {
	User     string
	Password bool
}

// Kubespray is the inventory heatsible hands kubespray, in format:
// kubespray's groups only (kube_control_plane, etcd, kube_node, calico_rr,
// k8s_cluster), hosts named as heatsible names them (kubespray registers the
// nodes under these names), connection settings inline because the file
// lives outside the run bundle and its group_vars, and passwords only as
// references to the run's kubespray vars file, which every kubespray run
// gets with -e @. Nodes in without are left out (scale-in, heal of a node),
// and so are the nodes that are neither masters nor workers.
func Kubespray(nodes []Node, master, worker KubesprayConn, without []string, format Format) ([]byte, error) {
	type conn struct {
		KubesprayConn
		secret string
	}
	byRole := map[Role]conn{
		Master: {master, "master_password"},
		Worker: {worker, "worker_password"},
	}
	inv := &Inventory{}
	var masters, workers []string
	if err := checkNodes(nodes); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if slices.Contains(without, n.Name) || (n.Role != Master && n.Role != Worker) {
			continue
		}
		vars := []Var{{Name: "ansible_host", Value: n.SSHAddress}, {Name: "ip", Value: n.Address}, {Name: "access_ip", Value: n.Address}}
		cn := byRole[n.Role]
		if cn.User != "" {
			vars = append(vars, Var{Name: "ansible_user", Value: cn.User})
		}
		if err := checkVars(n.Name, vars); err != nil {
			return nil, err
		}
		if cn.Password {
			ref := "{{ heatsible_secrets." + cn.secret + " }}"
			vars = append(vars, Var{Name: "ansible_password", Value: ref}, Var{Name: "ansible_become_password", Value: ref})
		}
		inv.Hosts = append(inv.Hosts, Host{Name: n.Name, Vars: vars})
		if n.Role == Master {
			masters = append(masters, n.Name)
		} else {
			workers = append(workers, n.Name)
		}
	}
	inv.Groups = kubesprayGroups(masters, workers)
	var buf bytes.Buffer
	if format == INI {
		buf.WriteString("# Written by heatsible for kubespray; passwords are references to the run's 0600 vars file.\n")
	} else {
		buf.WriteString("---\n# Written by heatsible for kubespray; passwords are references to the run's 0600 vars file.\n")
	}
	if err := inv.Write(&buf, format); err != nil {
		return nil, fmt.Errorf("writing the kubespray inventory: %w", err)
	}
	return buf.Bytes(), nil
}
