package render

import (
	"testing"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
)

const (
	testPkg      = "../../testdata/package"
	testPackage  = testPkg
	tackerScript = "Scripts/install_external_lb.sh"
)

// loadRequest reads and validates testdata/requests/NAME.json against the
// test package.
func loadRequest(t testing.TB, name string) *params.Request {
	t.Helper()
	req, err := params.Load("../../testdata/requests/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Validate(params.Options{PackageDir: testPkg, RequirePackage: true}); err != nil {
		t.Fatal(err)
	}
	return req
}

// fixture is request NAME on the topology k8s-a.
func fixture(t testing.TB, name string) (*params.Request, *topology.Topology) {
	t.Helper()
	req := loadRequest(t, name)
	topo, err := topology.Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return req, topo
}

// scaleFixture is the kubespray + external LB request on a topology with
// Heat's member names and ids, three masters and the LB's CP, the load
// balancer a node as lcm.LoadTopology makes it.
func scaleFixture(t testing.TB, request string) (*params.Request, *topology.Topology) {
	t.Helper()
	req := loadRequest(t, request)
	topo, err := topology.Load("../../testdata/topology/k8s-lb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := req.ValidateTopology(topo); err != nil {
		t.Fatal(err)
	}
	if lb := req.Cluster.ExternalLBParam; lb != nil && len(topo.ByRole(topology.RoleExternalLB)) == 0 {
		if addr, ok := topo.CPs[lb.SSHCPName]; ok {
			topo.Nodes = append(topo.Nodes, topology.Node{Name: "external-lb", Role: topology.RoleExternalLB, SSHAddress: addr, Address: addr})
		}
	}
	return req, topo
}

// renderOp renders op of req on t with the test package.
func renderOp(req *params.Request, t *topology.Topology, op Op) (*Files, error) {
	return Render(Input{Request: req, Topology: t, PackageDir: testPkg, Op: op, Version: "test"})
}
