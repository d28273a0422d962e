package lcm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
)

const (
	tackerScript = "Scripts/install_external_lb.sh"
	testPackage  = "../../testdata/package"
)

// tackerFixture is scaleFixture with the package's script of Tacker's
// contract and without the IPv6 worker (Tacker's contract is IPv4 only).
func tackerFixture(t *testing.T) (*params.Request, *topology.Topology) {
	t.Helper()
	req, topo := scaleFixture(t, "kubespray_lb")
	req.Cluster.ExternalLBParam.ScriptPath = tackerScript
	topo.Nodes = slices.DeleteFunc(topo.Nodes, func(n topology.Node) bool { return n.Address == "fd00::23" })
	return req, topo
}

// TestExternalLBTacker: with a script of Tacker's contract, every operation's
// play drives the role that way; instantiate-end (and heal-end of the whole
// cluster) hands it the -m/-w addresses in the topology's order; routes carry
// Tacker's server names.
func TestExternalLBTacker(t *testing.T) {
	const w1, w2 = "workernode-a1b2c3d4e5f6", "workernode-b2c3d4e5f6a1"
	routes := map[string]string{
		w1: `{"name":"` + w1 + `","address":"10.10.0.21","server":"worker21"}`,
		w2: `{"name":"` + w2 + `","address":"10.10.0.22","server":"worker22"}`,
	}
	for _, c := range []struct {
		name   string
		op     Op
		in     []string
		absent []string
	}{
		{"instantiate-end", Op{Name: OpInstantiateEnd}, []string{
			"name: External load balancer - Tacker's script once, a kubernetes-nodeport line per worker",
			"external_lb_interface: tacker", "external_lb_install: true", "external_lb_state: present",
			"external_lb_routes: [" + routes[w1] + "," + routes[w2] + "]",
			`external_lb_masters: ["10.10.0.10","10.10.0.11","10.10.0.12"]`,
			`external_lb_workers: ["10.10.0.21","10.10.0.22"]`}, nil},
		{"heal-end of the whole cluster", Op{Name: OpHealEnd, Target: TargetCluster}, []string{
			"external_lb_interface: tacker", "external_lb_install: true", `external_lb_workers: ["10.10.0.21","10.10.0.22"]`}, nil},
		{"scale-start", Op{Name: OpScaleStart, Nodes: []string{w2}}, []string{
			"name: External load balancer - remove the leaving nodes' lines from backend kubernetes-nodeport",
			"external_lb_interface: tacker", "external_lb_install: false", "external_lb_state: absent",
			"external_lb_routes: [" + routes[w2] + "]"}, []string{"external_lb_masters", "external_lb_workers"}},
		{"scale-end", Op{Name: OpScaleEnd, Nodes: []string{w2}}, []string{
			"name: External load balancer - the new nodes' lines in backend kubernetes-nodeport",
			"external_lb_interface: tacker", "external_lb_install: false", "external_lb_state: present",
			"external_lb_routes: [" + routes[w2] + "]"}, []string{"external_lb_masters"}},
		{"heal-start of a worker", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}}, []string{
			"external_lb_state: absent", "external_lb_routes: [" + routes[w1] + "]"}, nil},
		{"heal-end of a worker", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{w1}}, []string{
			"external_lb_state: present", "external_lb_routes: [" + routes[w1] + "]"}, nil},
		// A master's heal touches no line: Tacker's driver never edits the
		// masters' lines either.
		{"heal-end of a master", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-2"}}, nil,
			[]string{"external_lb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, topo := tackerFixture(t)
			f, err := PrepareOp(req, topo, testPackage, c.op, "test")
			if err != nil {
				t.Fatal(err)
			}
			if f.LBInterface != params.LBTacker {
				t.Errorf("LBInterface %q, want tacker", f.LBInterface)
			}
			want, _ := os.ReadFile(filepath.Join(testPackage, tackerScript))
			if c.in != nil && string(f.Extra[ExternalLBScript]) != string(want) {
				t.Errorf("the bundle does not carry the script unchanged")
			}
			for _, s := range c.in {
				if !strings.Contains(string(f.Playbook), s) {
					t.Errorf("playbook lacks %q:\n%s", s, f.Playbook)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(string(f.Playbook), s) {
					t.Errorf("playbook has %q:\n%s", s, f.Playbook)
				}
			}
		})
	}
}

// TestExternalLBTackerRefusals: what Tacker's naming cannot express is
// refused before anything runs, naming the node.
func TestExternalLBTackerRefusals(t *testing.T) {
	t.Run("IPv6 worker", func(t *testing.T) {
		req, topo := scaleFixture(t, "kubespray_lb")
		req.Cluster.ExternalLBParam.ScriptPath = tackerScript
		_, err := PrepareOp(req, topo, testPackage, Op{Name: OpScaleStart, Nodes: []string{"workernode-a1b2c3d4e5f6"}}, "test")
		if err == nil || !strings.Contains(err.Error(), `workernode-c3d4e5f6a1b2 has the address "fd00::23"; a script of Tacker's contract (-m/-w) takes IPv4 addresses`) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("two workers with one name", func(t *testing.T) {
		req, topo := tackerFixture(t)
		for i := range topo.Nodes {
			if topo.Nodes[i].Address == "10.10.0.22" {
				topo.Nodes[i].Address = "10.20.0.21"
			}
		}
		_, err := PrepareOp(req, topo, testPackage, Op{Name: OpInstantiateEnd}, "test")
		if err == nil || !strings.Contains(err.Error(), "workers workernode-a1b2c3d4e5f6 and workernode-b2c3d4e5f6a1 both get the server name worker21") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("IPv6 master at instantiate", func(t *testing.T) {
		req, topo := tackerFixture(t)
		topo.Nodes[1].Address = "fd00::11"
		_, err := PrepareOp(req, topo, testPackage, Op{Name: OpInstantiateEnd}, "test")
		if err == nil || !strings.Contains(err.Error(), `master-1 has the address "fd00::11"`) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("a script that fits neither interface", func(t *testing.T) {
		pkg := t.TempDir()
		if err := os.MkdirAll(filepath.Join(pkg, "Scripts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "Scripts", "lb.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		req, topo := scaleFixture(t, "kubespray_lb")
		req.Cluster.ExternalLBParam.ScriptPath = "Scripts/lb.sh"
		req.Cluster.PVRegistrationParams = nil // not in this package
		_, err := PrepareOp(req, topo, pkg, Op{Name: OpScaleStart, Nodes: []string{"workernode-a1b2c3d4e5f6"}}, "test")
		if err == nil || !strings.Contains(err.Error(), params.Prefix+`.external_lb_param.script_path: "Scripts/lb.sh" fits neither`) {
			t.Errorf("got %v", err)
		}
	})
}

// TestExternalLBAPIPort: the port the VIM endpoint uses through the load
// balancer.
func TestExternalLBAPIPort(t *testing.T) {
	req, _ := scaleFixture(t, "kubespray_lb")
	if p, err := ExternalLBAPIPort(req, testPackage); p != 0 || err != nil {
		t.Errorf("heatsible's interface: %d, %v; want 0 (no API frontend)", p, err)
	}
	req.Cluster.ExternalLBParam.ScriptPath = "./" + tackerScript
	if p, err := ExternalLBAPIPort(req, testPackage); p != 8383 || err != nil {
		t.Errorf("Tacker's contract: %d, %v; want 8383", p, err)
	}
	req.Cluster.ExternalLBParam.ScriptPath = "Scripts/missing.sh"
	if _, err := ExternalLBAPIPort(req, testPackage); err == nil || !strings.Contains(err.Error(), "external_lb_param.script_path") {
		t.Errorf("missing script: %v", err)
	}
	req.Cluster.ExternalLBParam = nil
	if p, err := ExternalLBAPIPort(req, testPackage); p != 0 || err != nil {
		t.Errorf("no external_lb_param: %d, %v", p, err)
	}
}
