package lcm

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
	"github.com/heatsible/heatsible/internal/topology"
)

// scaleFixture is the kubespray + external LB request on a topology with
// Heat's member names and ids, three masters and the LB's CP.
func scaleFixture(t testing.TB, request string) (*params.Request, *topology.Topology) {
	t.Helper()
	req := loadRequest(t, request)
	topo, err := LoadTopology(context.Background(), req, Source{TopologyFile: "../../testdata/topology/k8s-lb.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	return req, topo
}

func phaseLines(f *OpFiles) string {
	var out []string
	for _, p := range f.Phases {
		out = append(out, p.String())
	}
	return strings.Join(out, " | ")
}

func TestOpPhases(t *testing.T) {
	const (
		w1, w2, w3 = "workernode-a1b2c3d4e5f6", "workernode-b2c3d4e5f6a1", "workernode-c3d4e5f6a1b2"
	)
	cases := []struct {
		name, request string
		op            Op
		phases        string
		// plays are the play names of heatsible's playbook, in order.
		plays []string
		// in must appear in the playbook.
		in []string
	}{
		{"instantiate with kubespray and LB", "kubespray_lb", Op{Name: OpInstantiateEnd},
			"write the kubespray inventory | kubespray cluster.yml | heatsible playbook",
			[]string{"Storage server - Cinder volumes and NFS exports", "NFS client on every master and worker", "PersistentVolumes", "External load balancer - install and route to the workers",
				"Tacker's Kubernetes VIM - ServiceAccount and token"},
			[]string{"external_lb_install: true", `{address: !unsafe "10.10.0.21", name: !unsafe "` + w1 + `"}`, `{address: !unsafe "fd00::23", name: !unsafe "` + w3 + `"}`}},
		{"instantiate without kubespray", "valid", Op{Name: OpInstantiateEnd}, "heatsible playbook",
			[]string{"Storage server - Cinder volumes and NFS exports", "NFS client on every master and worker", "PersistentVolumes", "Tacker's Kubernetes VIM - ServiceAccount and token"},
			[]string{`k8s_vim_endpoint_host: !unsafe "10.10.0.10"`, "k8s_vim_endpoint_port: 0"}},
		{"heal-end cluster is instantiate", "kubespray_lb", Op{Name: OpHealEnd, Target: TargetCluster},
			"write the kubespray inventory | kubespray cluster.yml | heatsible playbook", nil, []string{"heatsible test: heal-end for cluster k8s-a", "role: k8s_vim"}},
		{"scale-in by member name", "kubespray_lb", Op{Name: OpScaleStart, Nodes: []string{"b2c3d4e5f6a1"}},
			"heatsible playbook | kubespray remove-node.yml -e node=" + w2 + " -e skip_confirmation=true | write the kubespray inventory, without " + w2,
			[]string{"External load balancer - remove the routes to the leaving nodes", "Drain the leaving nodes"},
			[]string{"external_lb_state: absent", `k8s_node_names: [!unsafe "` + w2 + `"]`, `{address: !unsafe "10.10.0.22", name: !unsafe "` + w2 + `"}`}},
		{"scale-in of two, by node name and server id, without kubespray", "valid", Op{Name: OpScaleStart, Nodes: []string{w1, "0b0e8f4c-0000-4000-8000-0000000000a3"}},
			"heatsible playbook",
			[]string{"Drain the leaving nodes", "Delete the leaving nodes' Node objects"},
			[]string{`k8s_node_names: [!unsafe "` + w1 + `", !unsafe "` + w3 + `"]`, "k8s_node_state: absent"}},
		{"scale-out by member stack id", "kubespray_lb", Op{Name: OpScaleEnd, Nodes: []string{"5f7c0a1e-0000-4000-8000-0000000000b3"}},
			"write the kubespray inventory | kubespray facts.yml | kubespray scale.yml --limit=" + w3 + " | heatsible playbook",
			[]string{"NFS client on the new nodes", "External load balancer - routes to the new nodes"},
			[]string{`hosts: !unsafe "` + w3 + `"`, "external_lb_install: false", "external_lb_state: present"}},
		{"scale-out without kubespray or LB: kubeadm joins", "valid", Op{Name: OpScaleEnd, Nodes: []string{w1, w1}},
			"heatsible playbook", []string{"Join the new nodes with kubeadm", "NFS client on the new nodes"},
			[]string{`k8s_join_nodes: [!unsafe "` + w1 + `"]`, `k8s_join_addresses: {` + w1 + `: !unsafe "10.10.0.21"}`}},
		{"heal-start of a worker", "kubespray_lb", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"0b0e8f4c-0000-4000-8000-0000000000a1"}},
			"heatsible playbook | kubespray remove-node.yml -e allow_ungraceful_removal=true -e node=" + w1 + " -e reset_nodes=false -e skip_confirmation=true | write the kubespray inventory, without " + w1,
			[]string{"External load balancer - remove the routes to the leaving nodes", "Drain the leaving nodes"}, nil},
		{"heal-end of a worker", "kubespray_lb", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{w1}},
			"write the kubespray inventory | kubespray facts.yml | kubespray scale.yml --limit=" + w1 + " | heatsible playbook",
			[]string{"NFS client on the new nodes", "External load balancer - routes to the new nodes"}, nil},
		{"heal-end of a master that kubespray can re-add", "kubespray_lb", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-2"}},
			"write the kubespray inventory | kubespray facts.yml | kubespray cluster.yml --limit=etcd,kube_control_plane -e ignore_assert_errors=true | heatsible playbook",
			[]string{"NFS client on the new nodes"}, nil},
		{"terminate-end", "kubespray_lb", Op{Name: OpTerminateEnd},
			"remove the cluster's leftover staging directories on the Ansible host | remove the kubespray inventory heatsible wrote", nil, nil},
		{"heal-start of the whole cluster without kubespray", "valid", Op{Name: OpHealStart, Target: TargetCluster},
			"remove the cluster's leftover staging directories on the Ansible host", nil, nil},
		{"heal-start of the storage server", "kubespray_lb", Op{Name: OpHealStart, Target: TargetStorageServer},
			"heatsible playbook", []string{"Unregister the PersistentVolumes of the storage server"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.op.Check(); err != nil {
				t.Fatal(err)
			}
			req, topo := scaleFixture(t, c.request)
			f, err := RenderOp(req, topo, "../../testdata/package", c.op, "test")
			if err != nil {
				t.Fatal(err)
			}
			if got := phaseLines(f); got != c.phases {
				t.Errorf("phases:\n got %s\nwant %s", got, c.phases)
			}
			if len(f.Playbook) == 0 {
				if len(c.plays) > 0 {
					t.Fatalf("no playbook, want plays %q", c.plays)
				}
				return
			}
			plan, err := PlanFiles(f.Playbook, f.Inventory, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var plays []string
			for _, s := range plan.Steps {
				plays = append(plays, s.Name)
			}
			if c.plays != nil && strings.Join(plays, " | ") != strings.Join(c.plays, " | ") {
				t.Errorf("plays:\n got %q\nwant %q", plays, c.plays)
			}
			for _, s := range c.in {
				if !strings.Contains(string(f.Playbook), s) {
					t.Errorf("playbook lacks %q:\n%s", s, f.Playbook)
				}
			}
			if req.Cluster.ExternalLBParam != nil && strings.Contains(string(f.Playbook), "external_lb") {
				if len(f.Extra[ExternalLBScript]) == 0 {
					t.Errorf("the bundle does not carry the LB script")
				}
			}
		})
	}
}

func TestOpRefusals(t *testing.T) {
	cases := []struct {
		name, request string
		op            Op
		want          string
	}{
		{"scale-in of a master", "kubespray_lb", Op{Name: OpScaleStart, Nodes: []string{"master-1"}}, "master-1 is a control-plane node; heatsible scales workers only"},
		{"scale-out of the storage server", "kubespray_lb", Op{Name: OpScaleEnd, Nodes: []string{"storage-server"}}, "storage-server is the storage server; heal it with --storage-server"},
		{"unknown node", "kubespray_lb", Op{Name: OpScaleStart, Nodes: []string{"workernode-zzz"}}, `"workernode-zzz" is not a node of cluster k8s-a`},
		{"first master", "kubespray_lb", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"master-0"}}, "it is the first control-plane node"},
		{"master without kubespray", "external_lb", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"master-1"}}, "the request has no ansible.kubespray_root_path"},
		{"LB node", "kubespray_lb", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{ExternalLBName}}, "is the external_lb, not a Kubernetes node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, topo := scaleFixture(t, c.request)
			_, err := RenderOp(req, topo, "../../testdata/package", c.op, "test")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	// Etcd quorum: with one master (k8s-a), no master heal.
	req, _ := scaleFixture(t, "kubespray_lb")
	one, err := topology.Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	one.Nodes = append(one.Nodes, topology.Node{Name: "master-1", Role: topology.RoleMaster, SSHAddress: "192.0.2.11", Address: "10.10.0.11"})
	one.CPs["externalLB_CP"] = "10.10.0.50"
	if _, err := RenderOp(req, one, "../../testdata/package", Op{Name: OpHealStart, Target: TargetNode, Nodes: []string{"master-1"}}, "test"); err == nil || !strings.Contains(err.Error(), "without quorum") {
		t.Errorf("master heal with 2 masters: %v", err)
	}
}

func TestOpCheck(t *testing.T) {
	for _, c := range []struct {
		op   Op
		want string // "" = valid
	}{
		{Op{Name: OpInstantiateEnd}, ""},
		{Op{Name: OpInstantiateEnd, Nodes: []string{"a"}}, "takes no target"},
		{Op{Name: OpTerminateEnd, Target: TargetCluster}, "takes no target"},
		{Op{Name: OpHealStart}, "needs its target"},
		{Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"a", "b"}}, "one node at a time"},
		{Op{Name: OpHealEnd, Target: TargetStorageServer, Nodes: []string{"a"}}, "takes no --node"},
		{Op{Name: OpScaleStart}, "needs the leaving nodes"},
		{Op{Name: OpScaleEnd}, "needs the new nodes"},
		{Op{Name: OpScaleEnd, Nodes: []string{" "}}, "empty node name"},
		{Op{Name: OpScaleEnd, Target: TargetNode, Nodes: []string{"a"}}, "takes no heal target"},
		{Op{Name: OpHealEnd, Target: TargetStorageServer, DeleteReleased: true}, "--delete-released belongs to heal-start --storage-server"},
		{Op{Name: "scale"}, "heatsible run knows: instantiate-end, heal-start, heal-end, scale-start, scale-end, terminate-end"},
	} {
		err := c.op.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.op, err, c.want)
		}
	}
}

// TestKubesprayInventoryLoads loads the inventory handed to kubespray with
// the real ansible-inventory: kubespray's groups, the right hosts, the
// connection settings, passwords only as references.
func TestKubesprayInventoryLoads(t *testing.T) {
	if _, err := exec.LookPath("ansible-inventory"); err != nil {
		t.Skip("ansible-inventory not installed (apt-get install ansible); .ci/run installs it")
	}
	req, topo := scaleFixture(t, "kubespray_lb")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpScaleStart, Nodes: []string{"a1b2c3d4e5f6"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if f.KubesprayInventoryPath != "/home/ansible/kubespray/inventory/mycluster/hosts.yaml" || f.KubesprayRoot != "/home/ansible/kubespray" {
		t.Errorf("paths %q %q", f.KubesprayInventoryPath, f.KubesprayRoot)
	}
	for _, s := range []string{"test-password", "password1"} {
		if strings.Contains(string(f.KubesprayInventory), s) {
			t.Fatalf("kubespray inventory holds a secret:\n%s", f.KubesprayInventory)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(p, f.KubesprayInventory, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ansible-inventory", "-i", p, "--list")
	cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+dir, "ANSIBLE_LOCAL_TEMP="+dir, "ANSIBLE_INVENTORY_UNPARSED_FAILED=True")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ansible-inventory: %v\n%s", err, out)
	}
	var inv map[string]struct {
		Hosts    []string                  `json:"hosts"`
		Children []string                  `json:"children"`
		HostVars map[string]map[string]any `json:"hostvars"`
	}
	if err := json.Unmarshal(out, &inv); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"kube_control_plane": "master-0,master-1,master-2",
		"etcd":               "master-0,master-1,master-2",
		"kube_node":          "workernode-b2c3d4e5f6a1,workernode-c3d4e5f6a1b2",
	}
	for g, hosts := range want {
		if got := strings.Join(inv[g].Hosts, ","); got != hosts {
			t.Errorf("group %s: %s, want %s", g, got, hosts)
		}
	}
	if got := strings.Join(inv["k8s_cluster"].Children, ","); !strings.Contains(got, "kube_control_plane") || !strings.Contains(got, "kube_node") {
		t.Errorf("k8s_cluster children: %s", got)
	}
	hv := inv["_meta"].HostVars
	if _, ok := hv["storage-server"]; ok {
		t.Error("the storage server is in kubespray's inventory")
	}
	w := hv["workernode-c3d4e5f6a1b2"]
	// The addresses and the user are validated values (the inventory
	// package writes them plain: an INI inventory cannot carry !unsafe);
	// the password references stay templates.
	if w["ansible_host"] != "2001:db8::23" || w["ip"] != "fd00::23" || w["ansible_user"] != "ubuntu" || w["ansible_password"] != "{{ heatsible_secrets.worker_password }}" {
		t.Errorf("worker vars %v", w)
	}
	if m := hv["master-1"]; m["ansible_password"] != "{{ heatsible_secrets.master_password }}" {
		t.Errorf("master vars %v", m)
	}
}

// TestTerminateEndRemovesState runs terminate-end for real, locally: the
// inventory heatsible wrote for kubespray goes, the operator's own files in
// that directory stay, and so does nothing of the lock.
func TestTerminateEndRemovesState(t *testing.T) {
	stateDir := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", stateDir)
	req, topo := scaleFixture(t, "kubespray_lb")
	ks := filepath.Join(t.TempDir(), "kubespray")
	invDir := filepath.Join(ks, "inventory", "mycluster")
	req.Cluster.Ansible.KubesprayRootPath, req.Cluster.Ansible.TransferringInventoryPath = ks, invDir
	if err := os.MkdirAll(filepath.Join(invDir, "group_vars"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(invDir, "hosts.yaml"), []byte("all: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(invDir, "group_vars", "all.yml"), []byte("x: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	topoFile := filepath.Join(t.TempDir(), "topology.yaml")
	if err := topo.Save(topoFile); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), RunOptions{Operation: OpTerminateEnd, Request: req, PackageDir: "../../testdata/package",
		Source: Source{TopologyFile: topoFile}, Local: true, KnownHosts: kh, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(invDir, "hosts.yaml")); !os.IsNotExist(err) {
		t.Errorf("the kubespray inventory is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(invDir, "group_vars", "all.yml")); err != nil {
		t.Errorf("terminate-end removed the operator's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "k8s-a.lock")); !os.IsNotExist(err) {
		t.Errorf("the lock file is still there: %v", err)
	}
	if _, err := os.Stat(out.Record); err != nil {
		t.Errorf("the run record is gone: %v", err)
	}
}

// TestPlanSkipsKubesprayWhenNarrowed: --tags and --limit narrow heatsible's
// plays only; the plan says the kubespray steps and the inventory write are
// skipped, and why.
func TestPlanSkipsKubesprayWhenNarrowed(t *testing.T) {
	req := loadRequest(t, "kubespray_lb")
	for _, c := range []struct {
		tags  []string
		limit string
		why   string
	}{
		{nil, "", ""},
		{[]string{"nfs_client"}, "", "--tags/--role select heatsible's roles only"},
		{nil, "workernode-c3d4e5f6a1b2", "--limit narrows heatsible's own plays only"},
	} {
		p, err := MakePlan(context.Background(), PlanOptions{Operation: OpScaleEnd, Nodes: []string{"workernode-c3d4e5f6a1b2"}, Request: req,
			PackageDir: "../../testdata/package", Source: Source{TopologyFile: "../../testdata/topology/k8s-lb.yaml"}, Tags: c.tags, Limit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, s := range p.Steps {
			if s.Kind == "" {
				continue
			}
			kinds = append(kinds, s.Kind)
			if s.Runs != (c.why == "") || s.Skip != c.why {
				t.Errorf("tags %v limit %q: step %d %q runs=%v skip=%q, want skip %q", c.tags, c.limit, s.Number, s.Name, s.Runs, s.Skip, c.why)
			}
		}
		if strings.Join(kinds, ",") != "write-inventory,kubespray,kubespray" {
			t.Errorf("phase steps %v", kinds)
		}
	}
	if got := render.SkipKubespray(true, nil, ""); !strings.Contains(got, "check mode") {
		t.Errorf("check mode: %q", got)
	}
}
