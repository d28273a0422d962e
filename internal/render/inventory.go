package render

import (
	"fmt"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// Inventory builds the cluster's inventory with the request's SSH users.
func Inventory(req *params.Request, t *topology.Topology) (*inventory.Inventory, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	nodes, err := inventoryNodes(t)
	if err != nil {
		return nil, err
	}
	var u inventory.Users
	c := req.Cluster
	if c.MasterNode != nil {
		u.Master = c.MasterNode.Username
	}
	if c.WorkerNode != nil {
		u.Worker = c.WorkerNode.Username
	}
	if c.StorageServer != nil {
		u.Storage = c.StorageServer.Username
	}
	if c.ExternalLBParam != nil {
		u.ExternalLB = c.ExternalLBParam.SSHUsername
	}
	return inventory.Build(nodes, u)
}

// inventoryRoles maps the topology's roles onto the inventory's.
var inventoryRoles = map[topology.Role]inventory.Role{
	topology.RoleMaster:     inventory.Master,
	topology.RoleWorker:     inventory.Worker,
	topology.RoleStorage:    inventory.Storage,
	topology.RoleExternalLB: inventory.ExternalLB,
}

// inventoryNodes are t's nodes as package inventory takes them, in order.
func inventoryNodes(t *topology.Topology) ([]inventory.Node, error) {
	out := make([]inventory.Node, 0, len(t.Nodes))
	for _, n := range t.Nodes {
		r, ok := inventoryRoles[n.Role]
		if !ok {
			return nil, fmt.Errorf("inventory: node %s has the role %q, which has no inventory group", n.Name, n.Role)
		}
		out = append(out, inventory.Node{Name: n.Name, Role: r, SSHAddress: n.SSHAddress, Address: n.Address})
	}
	return out, nil
}
