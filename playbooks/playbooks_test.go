package playbooks

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestRenderGolden(t *testing.T) {
	cases := map[string]Data{
		"instantiate_end":            {Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Storage: true, PVs: true, PVState: "present", Version: "test"},
		"instantiate_end_no_storage": {Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Version: "test"},
		"heal_start_storage":         {Cluster: "k8s-a", Operation: "heal-start", Target: "storage-server", FirstMaster: "master-0", Storage: true, PVs: true, Version: "test"},
		"heal_end_storage":           {Cluster: "k8s-a", Operation: "heal-end", Target: "storage-server", FirstMaster: "master-0", Storage: true, PVs: true, Version: "test"},
		"instantiate_end_lb": {Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Storage: true, PVs: true, PVState: "present", Version: "test",
			Kubespray: true, LB: true, LBInstall: true, LBRoutes: []Route{{"worker-0", "10.0.0.20"}, {"worker-1", "fd00::21"}}},
		"scale_start_kubespray_lb": {Cluster: "k8s-a", Operation: "scale-start", FirstMaster: "master-0", Version: "test",
			Nodes: []string{"worker-1", "worker-2"}, Kubespray: true, LB: true, LBRoutes: []Route{{"worker-1", "10.0.0.21"}, {"worker-2", "10.0.0.22"}}},
		"heal_start_node": {Cluster: "k8s-a", Operation: "heal-start", Target: "node", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-1"}, Kubespray: true,
			Addresses: map[string]string{"worker-1": "10.0.0.21"}},
		"heal_start_node_kubeadm": {Cluster: "k8s-a", Operation: "heal-start", Target: "node", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-1"},
			Addresses: map[string]string{"worker-1": "10.0.0.21"}, JoinCheck: true, Peers: []string{"worker-0", "worker-2"}},
		"scale_end_kubeadm": {Cluster: "k8s-a", Operation: "scale-end", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-2", "worker-3"},
			Addresses: map[string]string{"worker-2": "10.0.0.22", "worker-3": "fd00::23"}, KubeadmJoin: true},
		"scale_end_lb": {Cluster: "k8s-a", Operation: "scale-end", FirstMaster: "master-0", Version: "test",
			Nodes: []string{"worker-2"}, Kubespray: true, LB: true, LBRoutes: []Route{{"worker-2", "10.0.0.22"}}},
		"heal_end_master": {Cluster: "k8s-a", Operation: "heal-end", Target: "node", FirstMaster: "master-0", Version: "test", Nodes: []string{"master-1"}, Kubespray: true, LB: true},
	}
	tmpl := map[string]string{"scale_start_kubespray_lb": "node_remove", "heal_start_node": "node_remove", "scale_end_lb": "node_add", "heal_end_master": "node_add",
		"heal_start_node_kubeadm": "node_remove", "scale_end_kubeadm": "node_add"}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			op := d.Operation
			if tmpl[name] != "" {
				op = tmpl[name]
			}
			out, err := Render(op, d)
			if err != nil {
				t.Fatal(err)
			}
			var plays []map[string]any
			if err := yaml.Unmarshal(out, &plays); err != nil {
				t.Fatalf("not YAML: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "[[") {
				t.Errorf("template delimiters left in the output:\n%s", out)
			}
			golden := filepath.Join("testdata", name+".yml")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if string(out) != string(want) {
				t.Errorf("differs from %s:\n%s", golden, out)
			}
		})
	}
}

func TestUnknownHealTarget(t *testing.T) {
	for _, op := range []string{"heal-start", "heal-end"} {
		if _, err := Render(op, Data{Operation: op, Target: "node"}); err == nil || !strings.Contains(err.Error(), "has no playbook") {
			t.Errorf("%s with target node: got %v", op, err)
		}
	}
}

func TestUnknownOperation(t *testing.T) {
	if _, err := Render("explode", Data{}); err == nil || !strings.Contains(err.Error(), "instantiate-end") {
		t.Fatalf("got %v", err)
	}
}

// TestSyntaxCheck runs ansible-playbook --syntax-check on every rendered
// playbook, with the embedded roles on the roles path.
func TestSyntaxCheck(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (apt-get install ansible); .ci/run installs it")
	}
	dir := t.TempDir()
	for _, op := range Operations() {
		out, err := Render(op, Data{Cluster: "c", Operation: op, Target: "storage-server", FirstMaster: "m", Storage: true, PVs: true, PVState: "present", Version: "test",
			Nodes: []string{"w"}, LB: true, LBInstall: true, LBRoutes: []Route{{"w", "10.0.0.20"}},
			Addresses: map[string]string{"w": "10.0.0.20"}, KubeadmJoin: true, JoinCheck: true, Peers: []string{"w2"}})
		if err != nil {
			t.Fatal(err)
		}
		pb := filepath.Join(dir, op+".yml")
		if err := os.WriteFile(pb, out, 0o644); err != nil {
			t.Fatal(err)
		}
		inv := filepath.Join(dir, "hosts.ini")
		if err := os.WriteFile(inv, []byte("[nfs_server]\ns\n[kube_control_plane]\nm\n[kube_node]\nw\nw2\n[nfs_client:children]\nkube_control_plane\nkube_node\n[external_lb]\nlb\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("ansible-playbook", "--syntax-check", "-i", inv, pb)
		rolesDir, _ := filepath.Abs("../roles")
		cmd.Env = append(os.Environ(), "ANSIBLE_ROLES_PATH="+rolesDir, "ANSIBLE_HOME="+dir, "ANSIBLE_LOCAL_TEMP="+dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", op, err, b)
		}
	}
}
