package lcm

import (
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// The names of package render that the CLI reaches through lcm: an
// operation and its targets, --wait, the inventory command's.

// Op is an operation with its target (see render.Op).
type Op = render.Op

// Operations heatsible runs, and heal targets.
const (
	OpInstantiateEnd    = render.OpInstantiateEnd
	OpHealStart         = render.OpHealStart
	OpHealEnd           = render.OpHealEnd
	OpScaleStart        = render.OpScaleStart
	OpScaleEnd          = render.OpScaleEnd
	OpTerminateEnd      = render.OpTerminateEnd
	TargetStorageServer = render.TargetStorageServer
	TargetCluster       = render.TargetCluster
	TargetNode          = render.TargetNode
	PhaseKubespray      = render.PhaseKubespray
)

// KubesprayPlan is what every kubespray step of a plan gets.
type KubesprayPlan = render.KubesprayPlan

// ParseWaits reads --wait's values (see render.ParseWaits).
func ParseWaits(specs []string) (map[string]int, error) { return render.ParseWaits(specs) }

// WaitsHelp is --wait's part of run's help.
func WaitsHelp() string { return render.WaitsHelp() }

// ParseFormat checks an inventory --format value.
func ParseFormat(s string) (inventory.Format, error) { return inventory.ParseFormat(s) }

// Inventory builds the cluster's inventory with the request's SSH users.
func Inventory(req *params.Request, t *topology.Topology) (*inventory.Inventory, error) {
	return render.Inventory(req, t)
}
