package lcm

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

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

// lbPlay is the external_lb play of a rendered playbook: its name and
// vars, decoded from the YAML (so the test holds whatever the values'
// quoting or tags).
func lbPlay(t *testing.T, playbook []byte) (name string, vars map[string]any) {
	t.Helper()
	var plays []struct {
		Name  string         `yaml:"name"`
		Vars  map[string]any `yaml:"vars"`
		Roles []struct {
			Role string `yaml:"role"`
		} `yaml:"roles"`
	}
	if err := yaml.Unmarshal(playbook, &plays); err != nil {
		t.Fatalf("playbook: %v\n%s", err, playbook)
	}
	for _, p := range plays {
		if len(p.Roles) == 1 && p.Roles[0].Role == "external_lb" {
			return p.Name, p.Vars
		}
	}
	return "", nil
}

// TestExternalLBTacker: with a script of Tacker's contract, every operation's
// play drives the role that way; instantiate-end (and heal-end of the whole
// cluster) hands it the -m/-w addresses in the topology's order; routes carry
// Tacker's server names.
func TestExternalLBTacker(t *testing.T) {
	const w1, w2 = "workernode-a1b2c3d4e5f6", "workernode-b2c3d4e5f6a1"
	route := func(name, addr, server string) map[string]any {
		return map[string]any{"name": name, "address": addr, "server": server}
	}
	r1, r2 := route(w1, "10.10.0.21", "worker21"), route(w2, "10.10.0.22", "worker22")
	masters := []any{"10.10.0.10", "10.10.0.11", "10.10.0.12"}
	workers := []any{"10.10.0.21", "10.10.0.22"}
	for _, c := range []struct {
		name string
		op   Op
		play string         // "" = no external_lb play
		vars map[string]any // nil value: the variable must be absent
	}{
		{"instantiate-end", Op{Name: OpInstantiateEnd}, "External load balancer - Tacker's script once, a kubernetes-nodeport line per worker", map[string]any{
			"external_lb_interface": "tacker", "external_lb_install": true, "external_lb_state": "present",
			"external_lb_routes": []any{r1, r2}, "external_lb_masters": masters, "external_lb_workers": workers}},
		{"heal-end of the whole cluster", Op{Name: OpHealEnd, Target: TargetCluster}, "External load balancer - Tacker's script once, a kubernetes-nodeport line per worker", map[string]any{
			"external_lb_interface": "tacker", "external_lb_install": true, "external_lb_masters": masters, "external_lb_workers": workers}},
		{"scale-start", Op{Name: OpScaleStart, Nodes: []string{w2}}, "External load balancer - remove the leaving nodes' lines from backend kubernetes-nodeport", map[string]any{
			"external_lb_interface": "tacker", "external_lb_install": false, "external_lb_state": "absent",
			"external_lb_routes": []any{r2}, "external_lb_masters": nil, "external_lb_workers": nil}},
		{"scale-end", Op{Name: OpScaleEnd, Nodes: []string{w2}}, "External load balancer - the new nodes' lines in backend kubernetes-nodeport", map[string]any{
			"external_lb_interface": "tacker", "external_lb_install": false, "external_lb_state": "present",
			"external_lb_routes": []any{r2}, "external_lb_masters": nil}},
		{"heal-start of a worker", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}}, "External load balancer - remove the leaving nodes' lines from backend kubernetes-nodeport", map[string]any{
			"external_lb_state": "absent", "external_lb_routes": []any{r1}}},
		{"heal-end of a worker", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{w1}}, "External load balancer - the new nodes' lines in backend kubernetes-nodeport", map[string]any{
			"external_lb_state": "present", "external_lb_routes": []any{r1}}},
		// A master's heal touches no line: Tacker's driver never edits the
		// masters' lines either.
		{"heal-end of a master", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-2"}}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, topo := tackerFixture(t)
			f, err := RenderOp(req, topo, testPackage, c.op, "test")
			if err != nil {
				t.Fatal(err)
			}
			if f.LBInterface != params.LBTacker {
				t.Errorf("LBInterface %q, want tacker", f.LBInterface)
			}
			name, vars := lbPlay(t, f.Playbook)
			if name != c.play {
				t.Fatalf("external_lb play %q, want %q:\n%s", name, c.play, f.Playbook)
			}
			if c.play == "" {
				return
			}
			want, _ := os.ReadFile(filepath.Join(testPackage, tackerScript))
			if string(f.Extra[ExternalLBScript]) != string(want) {
				t.Errorf("the bundle does not carry the script unchanged")
			}
			for k, v := range c.vars {
				got, ok := vars[k]
				switch {
				case v == nil && ok:
					t.Errorf("%s is set (%v), want it absent", k, got)
				case v != nil && !reflect.DeepEqual(got, v):
					t.Errorf("%s = %#v, want %#v", k, got, v)
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
		_, err := RenderOp(req, topo, testPackage, Op{Name: OpScaleStart, Nodes: []string{"workernode-a1b2c3d4e5f6"}}, "test")
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
		_, err := RenderOp(req, topo, testPackage, Op{Name: OpInstantiateEnd}, "test")
		if err == nil || !strings.Contains(err.Error(), "workers workernode-a1b2c3d4e5f6 and workernode-b2c3d4e5f6a1 both get the server name worker21") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("IPv6 master at instantiate", func(t *testing.T) {
		req, topo := tackerFixture(t)
		topo.Nodes[1].Address = "fd00::11"
		_, err := RenderOp(req, topo, testPackage, Op{Name: OpInstantiateEnd}, "test")
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
		_, err := RenderOp(req, topo, pkg, Op{Name: OpScaleStart, Nodes: []string{"workernode-a1b2c3d4e5f6"}}, "test")
		if err == nil || !strings.Contains(err.Error(), params.Prefix+`.external_lb_param.script_path: "Scripts/lb.sh" fits neither`) {
			t.Errorf("got %v", err)
		}
	})
}
