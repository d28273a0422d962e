package lcm

import (
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
	"github.com/heatsible/heatsible/internal/topology"
)

// The tests of a run render their operation as Run does.

type OpFiles = render.Files

func RenderOp(req *params.Request, t *topology.Topology, pkgDir string, op Op, version string) (*OpFiles, error) {
	return render.Render(render.Input{Request: req, Topology: t, PackageDir: pkgDir, Op: op, Version: version})
}

const (
	ExternalLBScript     = render.ExternalLBScript
	PhasePlaybook        = render.PhasePlaybook
	PhaseWriteInventory  = render.PhaseWriteInventory
	PhaseRemoveInventory = render.PhaseRemoveInventory
	PhaseCleanStaging    = render.PhaseCleanStaging
	KubesprayVarsFile    = render.KubesprayVarsFile
	ManifestDir          = render.ManifestDir
	VIMInfoFile          = render.VIMInfoFile
	VIMRole              = render.VIMRole
	VIMNamespace         = render.VIMNamespace
	VIMServiceAccount    = render.VIMServiceAccount
	VIMTokenSecret       = render.VIMTokenSecret
)

type (
	Phase       = render.Phase
	VIMEndpoint = render.VIMEndpoint
	Step        = render.Step
)

var (
	PlanFiles           = render.PlanFiles
	MaskedKubesprayVars = render.MaskedKubesprayVars
)
var precheck = render.Precheck
