package playbooks

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/collection"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestRenderGolden(t *testing.T) {
	cases := map[string]Data{
		"instantiate_end":            {NFSClient: true, Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Storage: true, PVs: true, PVState: "present", Version: "test", VIM: true, VIMHost: "10.10.0.10"},
		"instantiate_end_no_storage": {Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Version: "test"},
		"heal_start_storage":         {Cluster: "k8s-a", Operation: "heal-start", Target: "storage-server", FirstMaster: "master-0", Storage: true, PVs: true, Version: "test"},
		"heal_end_storage":           {Cluster: "k8s-a", Operation: "heal-end", Target: "storage-server", FirstMaster: "master-0", Storage: true, PVs: true, Version: "test"},
		"instantiate_end_lb": {NFSClient: true, Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Storage: true, PVs: true, PVState: "present", Version: "test",
			Kubespray: true, LB: true, LBInstall: true, LBRoutes: []Route{{Name: "worker-0", Address: "10.0.0.20"}, {Name: "worker-1", Address: "fd00::21"}}, VIM: true, VIMHost: "192.0.2.50", VIMPort: 8383},
		"scale_start_kubespray_lb": {Cluster: "k8s-a", Operation: "scale-start", FirstMaster: "master-0", Version: "test",
			Nodes: []string{"worker-1", "worker-2"}, Kubespray: true, LB: true, LBRoutes: []Route{{Name: "worker-1", Address: "10.0.0.21"}, {Name: "worker-2", Address: "10.0.0.22"}}},
		"heal_start_node": {Cluster: "k8s-a", Operation: "heal-start", Target: "node", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-1"}, Kubespray: true,
			Addresses: map[string]string{"worker-1": "10.0.0.21"}},
		"heal_start_node_kubeadm": {Cluster: "k8s-a", Operation: "heal-start", Target: "node", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-1"},
			Addresses: map[string]string{"worker-1": "10.0.0.21"}, JoinCheck: true, Peers: []string{"worker-0", "worker-2"}},
		"scale_end_kubeadm": {NFSClient: true, Cluster: "k8s-a", Operation: "scale-end", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-2", "worker-3"},
			Addresses: map[string]string{"worker-2": "10.0.0.22", "worker-3": "fd00::23"}, KubeadmJoin: true},
		"scale_end_lb": {NFSClient: true, Cluster: "k8s-a", Operation: "scale-end", FirstMaster: "master-0", Version: "test",
			Nodes: []string{"worker-2"}, Kubespray: true, LB: true, LBRoutes: []Route{{Name: "worker-2", Address: "10.0.0.22"}}},
		"heal_end_master": {NFSClient: true, Cluster: "k8s-a", Operation: "heal-end", Target: "node", FirstMaster: "master-0", Version: "test", Nodes: []string{"master-1"}, Kubespray: true, LB: true},
		"instantiate_end_lb_tacker": {NFSClient: true, Cluster: "k8s-a", Operation: "instantiate-end", FirstMaster: "master-0", Version: "test", LB: true, LBInterface: "tacker", LBInstall: true,
			LBRoutes:  []Route{{Name: "worker-0", Address: "10.0.0.20", Server: "worker20"}, {Name: "worker-1", Address: "10.0.0.21", Server: "worker21"}},
			LBMasters: []string{"10.0.0.10"}, LBWorkers: []string{"10.0.0.20", "10.0.0.21"}},
		"scale_start_lb_tacker": {Cluster: "k8s-a", Operation: "scale-start", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-1"}, Kubespray: true, LB: true, LBInterface: "tacker",
			LBRoutes: []Route{{Name: "worker-1", Address: "10.0.0.21", Server: "worker21"}}},
		"scale_end_lb_tacker": {NFSClient: true, Cluster: "k8s-a", Operation: "scale-end", FirstMaster: "master-0", Version: "test", Nodes: []string{"worker-2"}, Kubespray: true, LB: true, LBInterface: "tacker",
			LBRoutes: []Route{{Name: "worker-2", Address: "10.0.0.22", Server: "worker22"}}},
	}
	tmpl := map[string]string{"scale_start_kubespray_lb": "node_remove", "heal_start_node": "node_remove", "scale_end_lb": "node_add", "heal_end_master": "node_add",
		"scale_start_lb_tacker": "node_remove", "scale_end_lb_tacker": "node_add",
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
	var cases []struct{ name, op, iface string }
	for _, op := range Operations() {
		cases = append(cases, struct{ name, op, iface string }{op, op, "heatsible"})
		if op == "instantiate-end" || op == "node-add" || op == "node-remove" {
			cases = append(cases, struct{ name, op, iface string }{op + "-tacker", op, "tacker"})
		}
	}
	for _, x := range cases {
		op := x.op
		out, err := Render(op, Data{Cluster: "c", Operation: op, Target: "storage-server", FirstMaster: "m", Storage: true, PVs: true, PVState: "present", Version: "test",
			Nodes: []string{"w"}, LB: true, LBInterface: x.iface, LBInstall: true, LBRoutes: []Route{{Name: "w", Address: "10.0.0.20", Server: "worker20"}},
			LBMasters: []string{"10.0.0.10"}, LBWorkers: []string{"10.0.0.20"},
			Addresses: map[string]string{"w": "10.0.0.20"}, KubeadmJoin: true, JoinCheck: true, Peers: []string{"w2"}})
		if err != nil {
			t.Fatal(err)
		}
		pb := filepath.Join(dir, x.name+".yml")
		if err := os.WriteFile(pb, out, 0o644); err != nil {
			t.Fatal(err)
		}
		inv := filepath.Join(dir, "hosts.ini")
		if err := os.WriteFile(inv, []byte("[nfs_server]\ns\n[kube_control_plane]\nm\n[kube_node]\nw\nw2\n[nfs_client:children]\nkube_control_plane\nkube_node\n[external_lb]\nlb\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("ansible-playbook", "--syntax-check", "-i", inv, pb)
		cmd.Env = ansibleEnv(t, dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", x.name, err, b)
		}
	}
}

// TestRenderLiteral renders every playbook with values that carry Jinja and
// YAML (node names, routes and the cluster name come from the topology;
// heatsible validates them, but the playbook must not depend on that): the
// plays are the template's, and ansible-playbook matches the host patterns
// literally.
func TestRenderLiteral(t *testing.T) {
	const jinja = "m{{ 7*7 }}"
	d := Data{
		Cluster:   "c\n- hosts: all\n  tasks: [{ansible.builtin.command: touch /tmp/PWNED}]\n# \u2028x",
		Operation: "op", Target: "storage-server", Version: "v\r\n- hosts: all",
		FirstMaster: jinja, Storage: true, PVs: true, NFSClient: true, PVState: "present",
		Nodes: []string{"n{{ 6*7 }}", `n"], x: [`},
		LB:    true, LBInstall: true, LBRoutes: []Route{{Name: "r{% raw %}", Address: "{{ lookup('pipe', 'id') }}"}},
	}
	wantPlays := map[string]int{"instantiate-end": 4, "heal-start": 1, "heal-end": 2, "node-add": 2, "node-remove": 3}
	dir := t.TempDir()
	inv := filepath.Join(dir, "hosts.yml")
	if err := os.WriteFile(inv, []byte("all:\n  hosts:\n    \"m{{ 7*7 }}\": {}\n    m49: {}\n    \"n{{ 6*7 }}\": {}\n    n42: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, op := range Operations() {
		t.Run(op, func(t *testing.T) {
			out, err := Render(op, d)
			if err != nil {
				t.Fatal(err)
			}
			var plays []map[string]any
			if err := yaml.Unmarshal(out, &plays); err != nil {
				t.Fatalf("not YAML: %v\n%s", err, out)
			}
			if len(plays) != wantPlays[op] {
				t.Fatalf("%d plays, want %d (a value broke out of its place):\n%s", len(plays), wantPlays[op], out)
			}
			for _, p := range plays {
				if h := p["hosts"]; h != jinja && h != "nfs_server" && h != "nfs_client" && h != "external_lb" && h != strings.Join(d.Nodes, ",") {
					t.Errorf("play %q runs on %q", p["name"], h)
				}
				vars, _ := p["vars"].(map[string]any)
				if names, ok := vars["k8s_node_names"]; ok && !reflect.DeepEqual(names, []any{d.Nodes[0], d.Nodes[1]}) {
					t.Errorf("k8s_node_names = %q", names)
				}
				if routes, ok := vars["external_lb_routes"]; ok && !reflect.DeepEqual(routes, []any{map[string]any{"name": "r{% raw %}", "address": "{{ lookup('pipe', 'id') }}"}}) {
					t.Errorf("external_lb_routes = %q", routes)
				}
			}
			if _, err := exec.LookPath("ansible-playbook"); err != nil {
				return
			}
			pb := filepath.Join(dir, op+".yml")
			if err := os.WriteFile(pb, out, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("ansible-playbook", "--list-hosts", "-i", inv, pb)
			cmd.Env = ansibleEnv(t, dir)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			for _, bad := range []string{"m49", "n42"} {
				if strings.Contains(string(b), bad) {
					t.Errorf("a host pattern was rendered as Jinja (%s):\n%s", bad, b)
				}
			}
			if (op != "node-add") != strings.Contains(string(b), jinja) {
				t.Errorf("ansible-playbook --list-hosts:\n%s", b)
			}
		})
	}
}

// ansibleEnv is ansible-playbook's environment for a playbook in dir: the
// repository's roles, and the collection heatsible.nfv they call, laid as a
// run bundle lays it.
func ansibleEnv(t *testing.T, dir string) []string {
	t.Helper()
	rolesDir, err := filepath.Abs("../roles")
	if err != nil {
		t.Fatal(err)
	}
	colls, err := collection.Lay(filepath.Join(dir, "collections"))
	if err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "ANSIBLE_ROLES_PATH="+rolesDir, "ANSIBLE_COLLECTIONS_PATH="+colls, "ANSIBLE_HOME="+dir, "ANSIBLE_LOCAL_TEMP="+dir)
}
