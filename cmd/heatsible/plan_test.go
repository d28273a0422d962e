package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestPlanGolden(t *testing.T) {
	req := filepath.Join(td, "requests", "valid.json")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	pkg := filepath.Join(td, "package")
	base := []string{"plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo}
	tests := []struct {
		golden string
		args   []string
	}{
		{"plan.txt", nil},
		{"plan_limit_tags.txt", []string{"--limit", "nfs_client:!workernode-c3d4e5f6a1b2", "--tags", "nfs_client,pv_register"}},
		{"plan_limit_storage.json", []string{"--limit", "storage-server"}},
		{"plan.json", nil},
		{"plan_heal_start_storage.txt", []string{"--storage-server"}},
		{"plan_limit_nothing.txt", []string{"--limit", "no-such-node"}},
		{"plan_heal_end_storage.txt", []string{"--storage-server"}},
		// no storage_server: no nfs_client, no pv_register, a note (issue 28)
		{"plan_no_storage.txt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			args := append(append([]string{}, base...), tt.args...)
			if strings.HasPrefix(tt.golden, "plan_no_storage") {
				args[3] = filepath.Join(td, "requests", "valid_no_storage_server.json")
			}
			if op := strings.TrimSuffix(strings.TrimPrefix(tt.golden, "plan_"), "_storage.txt"); strings.HasPrefix(op, "heal") {
				args[1] = strings.ReplaceAll(op, "_", "-")
			}
			if filepath.Ext(tt.golden) == ".json" {
				args = append([]string{"-o", "json"}, args...)
			}
			code, out, errs := heatsible(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			p := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/heatsible -run Golden -update creates it)", err)
			}
			if !bytes.Equal([]byte(out), want) {
				t.Errorf("output differs from %s (-update rewrites it):\n%s", p, out)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	req := filepath.Join(td, "requests", "valid.json")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown operation", []string{"plan", "nope", "--request", req, "--package", filepath.Join(td, "package"), "--topology", topo}, 2, `unknown operation "nope"`},
		{"no package", []string{"plan", "instantiate-end", "--request", req, "--topology", topo}, 2, "--package DIR"},
		{"heal without target", []string{"plan", "heal-end", "--request", req, "--package", filepath.Join(td, "package"), "--topology", topo}, 2, "--storage-server, --cluster, or one node"},
		{"no source", []string{"plan", "instantiate-end", "--request", req, "--package", filepath.Join(td, "package")}, 2, "--stack ID|NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := heatsible(t, tt.args...)
			if code != tt.code || !bytes.Contains([]byte(errs), []byte(tt.stderr)) {
				t.Errorf("exit %d, want %d; stderr %q lacks %q", code, tt.code, errs, tt.stderr)
			}
		})
	}
}

// TestPlanSeeds plans the seeds' sample bodies (testdata/seeds, their
// placeholders made concrete) on topologies with their CP names: the
// kubespray spec's body shows the INI inventory its
// transferring_inventory_path names and the variables kubespray gets,
// secrets masked; the PV spec's, whose storage_server has no nic_cp_name,
// plans its three PVs.
func TestPlanSeeds(t *testing.T) {
	seeds := filepath.Join(td, "seeds")
	tests := []struct {
		golden, body, topology, warning string
		json                            bool
		extra                           []string
	}{
		{"plan_seed_kubespray.txt", "kubespray-spec", "topology-kubespray.yaml", `pod_cidr: "192.168.3.0/16" has host bits set`, false, nil},
		{"plan_seed_kubespray.json", "kubespray-spec", "topology-kubespray.yaml", "", true, nil},
		// The PV spec's cluster is installed by Tacker's kubeadm driver
		// (its script_path): heatsible runs with the Tacker shim's kubeadm
		// variant's --tags; without them it is refused
		// (TestSeedScriptPathRefused).
		{"plan_seed_pv_spec.txt", "pv-spec", "topology-pv.yaml", "", false, []string{"--tags", "cinder_volume,nfs_server,nfs_client,pv_register"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			args := []string{"plan", "instantiate-end", "--request", filepath.Join(seeds, tt.body+".concrete.json"),
				"--package", filepath.Join(seeds, "package"), "--topology", filepath.Join(seeds, tt.topology)}
			args = append(args, tt.extra...)
			if tt.json {
				args = append([]string{"-o", "json"}, args...)
			}
			code, out, errs := heatsible(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if !strings.Contains(errs, tt.warning) {
				t.Errorf("stderr lacks %q:\n%s", tt.warning, errs)
			}
			for _, secret := range []string{"password1", "password2", "user1", "user2"} {
				if strings.Contains(out, secret) {
					t.Errorf("the plan shows the proxy's %s:\n%s", secret, out)
				}
			}
			p := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/heatsible -run TestPlanSeeds -update creates it)", err)
			}
			if out != string(want) {
				t.Errorf("output differs from %s (-update rewrites it):\n%s", p, out)
			}
		})
	}
}

// TestPlanAnsibleSettings: plan shows which ansible-playbook runs
// heatsible's roles and which runs kubespray, and where each setting comes
// from (a flag over the request's field); a bad flag is exit code 2,
// naming the flag, as a bad field is at validate.
func TestPlanAnsibleSettings(t *testing.T) {
	req := filepath.Join(td, "requests", "valid_ansible_playbooks.json")
	args := []string{"plan", "instantiate-end", "--request", req, "--package", filepath.Join(td, "package"), "--topology", filepath.Join(td, "topology", "k8s-a.yaml")}
	code, out, errs := heatsible(t, append(args, "--ansible-playbook", "/opt/ansible-2.19")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"   heatsible's roles: /opt/ansible-2.19 (a virtualenv's bin/ansible-playbook if it is a directory) [flag]\n",
		"   kubespray: /home/ansible/kubespray-venv/bin/ansible-playbook (a virtualenv's bin/ansible-playbook if it is a directory) [request (ansible.kubespray_ansible_playbook)]\n",
		"      checked: Ansible 2.9 or later, within the bounds of kubespray's own /home/ansible/kubespray/playbooks/ansible_version.yml (or ansible_version.yml)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not say %q:\n%s", want, out)
		}
	}
	code, _, errs = heatsible(t, append(args, "--kubespray-ansible-playbook", "venv/bin/ansible-playbook")...)
	if code != 2 || !strings.Contains(errs, `--kubespray-ansible-playbook: "venv/bin/ansible-playbook" is a relative path`) {
		t.Errorf("exit %d, want 2 naming the flag: %s", code, errs)
	}
}

// TestNoStorageServerNote: a request without storage_server (and so
// without PVs) is valid, and validate and plan say that no storage role runs:
// no NFS client is installed, as Tacker's driver does (issue 28).
func TestNoStorageServerNote(t *testing.T) {
	req := filepath.Join(td, "requests", "valid_no_storage_server.json")
	pkg := filepath.Join(td, "package")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	const note = "additionalParams.k8s_cluster_installation_param: there is no storage_server and no pv_registration_params, so heatsible runs none of its storage roles"
	code, out, errs := heatsible(t, "validate", "--request", req, "--package", pkg)
	if code != 0 || !strings.Contains(errs, "heatsible: note: "+note) {
		t.Errorf("validate: exit %d, want 0 and the note\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = heatsible(t, "plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo)
	if code != 0 || !strings.Contains(out, "\nnote: "+note) || strings.Contains(out, "roles:  nfs_client") || strings.Contains(out, "roles:  pv_register") {
		t.Errorf("plan: exit %d, want 0, the note, no nfs_client and no pv_register\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// With storage_server there is no such note.
	code, out, errs = heatsible(t, "validate", "--request", filepath.Join(td, "requests", "valid.json"), "--package", pkg)
	if code != 0 || strings.Contains(out+errs, "no storage_server") {
		t.Errorf("exit %d; the request with storage_server got the note:\n%s%s", code, out, errs)
	}
}

// TestNoKubesprayNote: an ansible block with both kubespray paths empty
// (seed 003's own body) is valid, and validate and plan say what that
// means: no kubespray playbook runs (issue 28).
func TestNoKubesprayNote(t *testing.T) {
	req := filepath.Join(td, "requests", "valid_ansible_no_kubespray.json")
	pkg := filepath.Join(td, "package")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	const note = "ansible: kubespray_root_path and transferring_inventory_path are empty, so heatsible runs no kubespray playbook"
	plan := []string{"plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo}
	for _, tt := range []struct {
		name   string
		args   []string
		stdout string // or stderr, as the command prints it
		stderr string
	}{
		{"validate", []string{"validate", "--request", req, "--package", pkg}, "valid\n", "heatsible: note: additionalParams.k8s_cluster_installation_param." + note},
		{"validate -o json", []string{"-o", "json", "validate", "--request", req, "--package", pkg}, `"notes": [` + "\n" + `    "additionalParams.k8s_cluster_installation_param.` + note, ""},
		{"plan", plan, "\nnote: additionalParams.k8s_cluster_installation_param." + note, ""},
		{"plan -o json", append([]string{"-o", "json"}, plan...), `"notes": [`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := heatsible(t, tt.args...)
			if code != 0 || !strings.Contains(out, tt.stdout) || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d; want stdout with %q and stderr with %q\nstdout:\n%s\nstderr:\n%s", code, tt.stdout, tt.stderr, out, errs)
			}
		})
	}
	// A request with kubespray paths gets no such note.
	code, out, errs := heatsible(t, "validate", "--request", filepath.Join(td, "requests", "ansible_kubespray.json"), "--package", pkg)
	if code != 0 || strings.Contains(out+errs, "runs no kubespray playbook") {
		t.Errorf("exit %d; the kubespray request got the note:\n%s%s", code, out, errs)
	}
}
