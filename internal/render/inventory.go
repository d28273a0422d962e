package render

import (
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// Inventory builds the cluster's inventory with the request's SSH users.
func Inventory(req *params.Request, t *topology.Topology) (*inventory.Inventory, error) {
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
	return inventory.Build(t, u)
}
