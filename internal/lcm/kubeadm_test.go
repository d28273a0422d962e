package lcm

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/fail"
)

// TestNodeMembershipDecisions is what heatsible decides at plan time, before
// any host is touched, for node heal and scale with and without kubespray:
// which plays run, which --tags leave out, and what is refused (with which
// exit code). Without kubespray a worker's heal-start first checks on the
// hosts that heal-end can join it again, heal-end and scale-end join with
// kubeadm, a master is refused (exit 6), and --tags nfs_client is the NFS
// client only: no join, no check, no refusal.
func TestNodeMembershipDecisions(t *testing.T) {
	const (
		w1     = "workernode-a1b2c3d4e5f6"
		check  = "Check that heal-end can join the node again (kubeadm, read-only)"
		drain  = "Drain the leaving nodes"
		remove = "Delete the leaving nodes' Node objects"
		join   = "Join the new nodes with kubeadm"
		nfs    = "NFS client on the new nodes"
		lbOut  = "External load balancer - remove the routes to the leaving nodes"
		lbIn   = "External load balancer - routes to the new nodes"
	)
	cases := []struct {
		name, request string
		op            Op
		tags          []string
		code          int    // exit code of the refusal (0: planned)
		err           string // in the refusal
		runs          []string
		skipped       []string // plays rendered that --tags leave out
		kubespray     string   // the kubespray phases that run ("" none)
	}{
		// Without kubespray.
		{name: "worker heal-start: check first, then drain and delete", request: "valid",
			op:   Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}},
			runs: []string{check, drain, remove}},
		{name: "worker heal-start with the load balancer: the check comes before the route goes", request: "external_lb",
			op:   Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}},
			runs: []string{check, lbOut, drain, remove}},
		{name: "worker heal-start --tags nfs_client: nothing", request: "valid",
			op: Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}}, tags: []string{"nfs_client"},
			skipped: []string{check, drain, remove}},
		{name: "worker heal-start --tags k8s_node: guarded all the same", request: "valid",
			op: Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}}, tags: []string{"k8s_node"},
			runs: []string{check, drain, remove}},
		{name: "worker heal-end: kubeadm join, then the NFS client", request: "valid",
			op:   Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"0b0e8f4c-0000-4000-8000-0000000000a1"}},
			runs: []string{join, nfs}},
		{name: "worker heal-end --tags nfs_client: the NFS client only", request: "valid",
			op: Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{w1}}, tags: []string{"nfs_client"},
			runs: []string{nfs}, skipped: []string{join}},
		{name: "worker heal-end --tags k8s_join: the join only", request: "valid",
			op: Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{w1}}, tags: []string{"k8s_join"},
			runs: []string{join}, skipped: []string{nfs}},
		{name: "scale-out: kubeadm join, NFS client, load balancer", request: "external_lb",
			op:   Op{Name: OpScaleEnd, Nodes: []string{"5f7c0a1e-0000-4000-8000-0000000000b3"}},
			runs: []string{join, nfs, lbIn}},
		{name: "scale-out --tags nfs_client", request: "valid",
			op: Op{Name: OpScaleEnd, Nodes: []string{w1}}, tags: []string{"nfs_client"},
			runs: []string{nfs}, skipped: []string{join}},
		{name: "scale-in: drain and delete, nothing to check (nothing comes back)", request: "valid",
			op:   Op{Name: OpScaleStart, Nodes: []string{"a1b2c3d4e5f6"}},
			runs: []string{drain, remove}},
		{name: "master heal-start: refused", request: "valid",
			op:   Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"master-1"}},
			code: fail.Refused, err: "heal-start --node master-1: a control-plane node is re-added by kubespray, and the request has no ansible.kubespray_root_path: without kubespray heatsible joins workers only"},
		{name: "master heal-end: refused", request: "valid",
			op:   Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-2"}},
			code: fail.Refused, err: "Nothing was changed. Heal the whole cluster (--cluster) instead"},
		{name: "master heal-end --tags nfs_client: the NFS client only", request: "valid",
			op: Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-1"}}, tags: []string{"nfs_client"},
			runs: []string{nfs}},
		{name: "first master heal-start --tags nfs_client: nothing, not refused", request: "valid",
			op: Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"master-0"}}, tags: []string{"nfs_client"},
			skipped: []string{drain, remove}},
		{name: "scale of a master stays an input error, whatever the tags", request: "valid",
			op: Op{Name: OpScaleEnd, Nodes: []string{"master-1"}}, tags: []string{"nfs_client"},
			code: fail.Invalid, err: "master-1 is a control-plane node; heatsible scales workers only"},

		// With kubespray: kubespray removes and re-adds; no kubeadm.
		{name: "kubespray: worker heal-start", request: "kubespray_lb",
			op:   Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{w1}},
			runs: []string{lbOut, drain}, kubespray: "remove-node.yml"},
		{name: "kubespray: worker heal-end", request: "kubespray_lb",
			op:   Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{w1}},
			runs: []string{nfs, lbIn}, kubespray: "facts.yml scale.yml"},
		{name: "kubespray: scale-out", request: "kubespray_lb",
			op:   Op{Name: OpScaleEnd, Nodes: []string{w1}},
			runs: []string{nfs, lbIn}, kubespray: "facts.yml scale.yml"},
		{name: "kubespray: the first master is still refused", request: "kubespray_lb",
			op:   Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"master-0"}},
			code: fail.Invalid, err: "it is the first control-plane node"},
		{name: "kubespray: the first master with --tags nfs_client", request: "kubespray_lb",
			op: Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-0"}}, tags: []string{"nfs_client"},
			runs: []string{nfs}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := loadRequest(t, c.request)
			p, err := MakePlan(context.Background(), PlanOptions{Operation: c.op.Name, Target: c.op.Target, Nodes: c.op.Nodes, Tags: c.tags,
				Request: req, PackageDir: "../../testdata/package", Source: Source{TopologyFile: "../../testdata/topology/k8s-lb.yaml"}})
			if c.code != 0 {
				if err == nil {
					t.Fatalf("planned, want exit code %d: %q", c.code, c.err)
				}
				if fail.Code(err) != c.code || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("exit code %d: %v\nwant %d: %q", fail.Code(err), err, c.code, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("exit code %d: %v", fail.Code(err), err)
			}
			var runs, skipped, ks []string
			for _, s := range p.Steps {
				switch {
				case s.Kind == PhaseKubespray && s.Runs:
					ks = append(ks, strings.TrimPrefix(s.Import, "/home/ansible/kubespray/"))
				case s.Kind != "":
				case s.Runs:
					runs = append(runs, s.Name)
				default:
					skipped = append(skipped, s.Name)
				}
			}
			if !slices.Equal(runs, c.runs) {
				t.Errorf("plays that run:\n got %q\nwant %q", runs, c.runs)
			}
			if !slices.Equal(skipped, c.skipped) {
				t.Errorf("plays --tags leave out:\n got %q\nwant %q", skipped, c.skipped)
			}
			if got := strings.Join(ks, " "); got != c.kubespray {
				t.Errorf("kubespray playbooks: %q, want %q", got, c.kubespray)
			}
		})
	}
}

// TestJoinPlaysGetTheNodes: the check and join plays run on the first
// master and the nodes (the check also on the other workers) and get the
// nodes' internal addresses, as do the drain and delete plays.
func TestJoinPlaysGetTheNodes(t *testing.T) {
	req, topo := scaleFixture(t, "valid")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"workernode-b2c3d4e5f6a1"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	pb := string(f.Playbook)
	for _, want := range []string{
		`hosts: !unsafe "master-0,workernode-b2c3d4e5f6a1,workernode-a1b2c3d4e5f6,workernode-c3d4e5f6a1b2"`,
		`k8s_join_action: check`,
		`k8s_join_peers: [!unsafe "workernode-a1b2c3d4e5f6", !unsafe "workernode-c3d4e5f6a1b2"]`,
		`k8s_join_addresses: {workernode-b2c3d4e5f6a1: !unsafe "10.10.0.22"}`,
		`k8s_node_addresses: {workernode-b2c3d4e5f6a1: !unsafe "10.10.0.22"}`,
	} {
		if !strings.Contains(pb, want) {
			t.Errorf("the heal-start playbook lacks %s:\n%s", want, pb)
		}
	}
	f, err = RenderOp(req, topo, "../../testdata/package", Op{Name: OpScaleEnd, Nodes: []string{"workernode-c3d4e5f6a1b2"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`hosts: !unsafe "master-0,workernode-c3d4e5f6a1b2"`, `k8s_join_action: join`, `k8s_join_addresses: {workernode-c3d4e5f6a1b2: !unsafe "fd00::23"}`} {
		if !strings.Contains(string(f.Playbook), want) {
			t.Errorf("the scale-end playbook lacks %s:\n%s", want, f.Playbook)
		}
	}
}
