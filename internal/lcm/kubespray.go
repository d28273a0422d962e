package lcm

import (
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// kubesprayInventory is the inventory heatsible hands kubespray: kubespray's
// groups only (kube_control_plane, etcd, kube_node, calico_rr, k8s_cluster),
// hosts named as heatsible names them (kubespray registers the nodes under
// these names), connection settings inline because the file lives outside
// the run bundle and its group_vars, and passwords only as references to the
// run's secrets file, which every kubespray run gets with -e @. Nodes in
// without are left out (scale-in, heal of a node).
func kubesprayInventory(req *params.Request, t *topology.Topology, without []string) ([]byte, error) {
	drop := map[string]bool{}
	for _, n := range without {
		drop[n] = true
	}
	c := req.Cluster
	type conn struct{ user, secret string }
	byRole := map[topology.Role]conn{}
	if m := c.MasterNode; m != nil {
		byRole[topology.RoleMaster] = conn{m.Username, "master_password"}
	}
	if w := c.WorkerNode; w != nil {
		byRole[topology.RoleWorker] = conn{w.Username, "worker_password"}
	}
	hosts := map[string]any{}
	var masters, workers []string
	for _, n := range t.Nodes {
		if drop[n.Name] || (n.Role != topology.RoleMaster && n.Role != topology.RoleWorker) {
			continue
		}
		h := map[string]any{"ansible_host": n.SSHAddress, "ip": n.Address, "access_ip": n.Address}
		if cn := byRole[n.Role]; cn.user != "" {
			h["ansible_user"] = cn.user
		}
		if cn := byRole[n.Role]; cn.secret != "" && hasSecret(req, n.Role) {
			ref := Template("{{ heatsible_secrets." + cn.secret + " }}")
			h["ansible_password"], h["ansible_become_password"] = ref, ref
		}
		hosts[n.Name] = h
		if n.Role == topology.RoleMaster {
			masters = append(masters, n.Name)
		} else {
			workers = append(workers, n.Name)
		}
	}
	group := func(names []string) map[string]any {
		hs := map[string]any{}
		for _, n := range names {
			hs[n] = nil
		}
		return map[string]any{"hosts": hs}
	}
	doc := map[string]any{"all": map[string]any{
		"hosts": hosts,
		"children": map[string]any{
			inventory.GroupKubeControlPlane: group(masters),
			inventory.GroupEtcd:             group(masters),
			inventory.GroupKubeNode:         group(workers),
			inventory.GroupCalicoRR:         map[string]any{"hosts": map[string]any{}},
			inventory.GroupK8sCluster: map[string]any{"children": map[string]any{
				inventory.GroupKubeControlPlane: nil, inventory.GroupKubeNode: nil, inventory.GroupCalicoRR: nil,
			}},
		},
	}}
	return marshal(doc)
}

func hasSecret(req *params.Request, r topology.Role) bool {
	c := req.Cluster
	switch r {
	case topology.RoleMaster:
		return c.MasterNode != nil && c.MasterNode.Password != ""
	case topology.RoleWorker:
		return c.WorkerNode != nil && c.WorkerNode.Password != ""
	}
	return false
}
